import NimbusSystem
import NimbusVocabulary
import Synchronization
import Testing
@testable import NimbusSimulation

@Suite struct CopyTests {
    @Test func aCopyIsWrittenNextToItsFileThenInstalled() throws {
        let sides = Sides()
        try sides.local.write(path("dir/file"), "0123456789")
        try sides.local.setAttributes(path("dir/file"), mode: 0o640, mtime: 1_234)
        try sides.cloud.makeDirectories(path("dir"))
        var reported: [Int64] = []
        let copy = try sides.prepare("dir/file") { reported.append($0) }
        #expect(copy.temporary == path("dir/.nimbus-tmp-1"))
        #expect(copy.bytesCopied == 10)
        #expect(try copy.source == sides.local.metadata(of: path("dir/file")))
        #expect(reported == [4, 8, 10], "progress is the running total, chunk by chunk")
        let temporary = try #require(sides.cloud.snapshot()[copy.temporary])
        #expect(temporary.metadata.mode == 0o640 && temporary.metadata.mtime == 1_234)

        let installed = try sides.cloud.install(copy, at: path("dir/file"), replacing: nil, displacedTo: nil, durable: true)
        let nodes = sides.cloud.snapshot()
        #expect(nodes.keys.sorted() == [path("dir"), path("dir/file")])
        #expect(nodes[path("dir/file")]?.metadata == installed)
        #expect(installed.inode == temporary.metadata.inode && installed.mtime == 1_234 && installed.device == 2)
        #expect(nodes[path("dir/file")]?.content == .file(bytes("0123456789")))
    }

    @Test func theTemporaryDirectoryIsMadeWhenFirstNeeded() throws {
        let sides = Sides(temporaryDirectory: path(".nimbus/tmp"))
        try sides.local.write(path("file"), "x")
        let first = try sides.prepare("file")
        let second = try sides.prepare("file")
        #expect(first.temporary == path(".nimbus/tmp/.nimbus-tmp-1"))
        #expect(second.temporary == path(".nimbus/tmp/.nimbus-tmp-2"))
        #expect(sides.cloud.snapshot()[path(".nimbus/tmp")]?.content == .directory)
    }

    @Test func withoutItsDirectoryOnThisSideACopyGoesToTheRoot() throws {
        let sides = Sides()
        try sides.local.write(path("new/dir/file"), "x")
        #expect(try sides.prepare("new/dir/file").temporary == path(".nimbus-tmp-1"))
    }

    @Test func aSourceNoLongerAsPlannedIsNotCopied() throws {
        let sides = Sides()
        try sides.local.write(path("file"), "old")
        let planned = try #require(try sides.local.metadata(of: path("file")))
        sides.clock.advance(by: .nanoseconds(1))
        try sides.local.write(path("file"), "new")
        expectCopyError(.sourceChanged(path("file"))) {
            _ = try sides.cloud.prepareCopy(of: path("file"), from: sides.local, expected: planned, durable: false) { _ in }
        }
        try sides.local.removeFile(path("file"))
        expectCopyError(.sourceChanged(path("file"))) {
            _ = try sides.cloud.prepareCopy(of: path("file"), from: sides.local, expected: planned, durable: false) { _ in }
        }
        var directory = planned
        directory.kind = .directory
        expectCopyError(.notAFile(path("file"))) {
            _ = try sides.cloud.prepareCopy(of: path("file"), from: sides.local, expected: directory, durable: false) { _ in }
        }
        #expect(sides.cloud.snapshot().isEmpty)
    }

    @Test func anUnreadableSourceIsAnError() throws {
        let sides = Sides()
        try sides.local.write(path("file"), "x")
        try sides.local.setAttributes(path("file"), mode: 0o200, mtime: nil)
        expectErrno(.permissionDenied) { _ = try sides.prepare("file") }
        #expect(sides.cloud.snapshot().isEmpty)
    }

    /// Edits made between two chunks, each of which the copy must notice — even the
    /// rewrite that keeps size and mtime, which only the ctime betrays on disk.
    @Test(arguments: ["append", "same-size rewrite", "replace by rename", "move away", "chmod", "remove"])
    func aSourceChangedDuringTheCopyFailsIt(edit: String) throws {
        let sides = Sides()
        try sides.local.write(path("file"), "0123456789")
        try sides.local.write(path("other"), "abcdefghij")
        let local = sides.local
        let edits = Mutex(0)
        sides.cloud.duringCopy = { source, copied in
            guard copied == 4, edits.withLock({ $0 += 1; return $0 }) == 1 else { return }
            switch edit {
            case "append": try? local.append(source, bytes("!"))
            case "same-size rewrite": try? local.write(source, "9876543210")
            case "replace by rename": try? local.rename(path("other"), to: source, replacing: true)
            case "move away": try? local.rename(source, to: path("moved"), replacing: false)
            case "chmod": try? local.setAttributes(source, mode: 0o600, mtime: nil)
            default: try? local.removeFile(source)
            }
        }
        expectCopyError(.sourceChanged(path("file"))) { _ = try sides.prepare("file") }
        #expect(edits.withLock { $0 } == 1)
        #expect(temporaryFiles(sides.cloud.snapshot()).isEmpty)
    }

    /// A refused install leaves the destination as it was and drops the prepared copy, as
    /// DiskFileSystem does.
    @Test func installingWhereSomethingAppearedIsRefused() throws {
        let sides = Sides()
        try sides.local.write(path("file"), "mine")
        let copy = try sides.prepare("file")
        try sides.cloud.write(path("file"), "theirs")
        var expected = sides.cloud.snapshot()
        expected[copy.temporary] = nil
        expectCopyError(.destinationChanged(path("file"))) {
            _ = try sides.cloud.install(copy, at: path("file"), replacing: nil, displacedTo: nil, durable: true)
        }
        #expect(sides.cloud.snapshot() == expected)
        sides.cloud.discard(copy)
        #expect(sides.cloud.snapshot() == expected)
    }

    @Test(arguments: ["rewritten", "touched", "chmodded", "replaced", "removed"])
    func replacingAStaleDestinationIsRefused(change: String) throws {
        let sides = Sides()
        try sides.local.write(path("file"), "new")
        try sides.cloud.write(path("file"), "old")
        let planned = try #require(try sides.cloud.metadata(of: path("file")))
        let copy = try sides.prepare("file")
        sides.clock.advance(by: .nanoseconds(1))
        switch change {
        case "rewritten": try sides.cloud.write(path("file"), "older")
        case "touched": try sides.cloud.setAttributes(path("file"), mode: nil, mtime: planned.mtime + 1)
        case "chmodded": try sides.cloud.setAttributes(path("file"), mode: 0o600, mtime: nil)
        case "replaced": try sides.cloud.writeFile(path("file"), contents: bytes("old"), mode: 0o644)
        default: try sides.cloud.removeFile(path("file"))
        }
        var expected = sides.cloud.snapshot()
        expected[copy.temporary] = nil
        expectCopyError(.destinationChanged(path("file"))) {
            _ = try sides.cloud.install(copy, at: path("file"), replacing: planned, displacedTo: nil, durable: true)
        }
        #expect(sides.cloud.snapshot() == expected)
    }

    @Test func replacingTheExpectedDestinationDropsIt() throws {
        let sides = Sides(cloudCapacity: 100)
        try sides.local.write(path("file"), "new")
        try sides.cloud.write(path("file"), [UInt8](repeating: 0, count: 50))
        let planned = try #require(try sides.cloud.metadata(of: path("file")))
        let copy = try sides.prepare("file")
        _ = try sides.cloud.install(copy, at: path("file"), replacing: planned, displacedTo: nil, durable: false)
        #expect(sides.cloud.snapshot().mapValues(\.content) == [path("file"): .file(bytes("new"))])
        #expect(try sides.cloud.spaceInfo().available == 97)
    }

    @Test func theReplacedFileCanBeKeptAsAVersionWithoutReplacingAnother() throws {
        let sides = Sides()
        try sides.local.write(path("file"), "new")
        try sides.cloud.write(path("file"), "old")
        let version = path(".nimbus/versions/file~1")
        for round in 1...2 {
            let planned = try #require(try sides.cloud.metadata(of: path("file")))
            let copy = try sides.prepare("file")
            _ = try sides.cloud.install(copy, at: path("file"), replacing: planned, displacedTo: version, durable: true)
            // A version already there is kept: the next one is numbered, as DiskFileSystem does.
            let kept = round == 1 ? version : path(".nimbus/versions/file~1 (2)")
            #expect(sides.cloud.snapshot()[kept]?.metadata == planned, "the old file moved, inode and mtime kept")
        }
        #expect(sides.cloud.snapshot()[path("file")]?.content == .file(bytes("new")))
        #expect(sides.cloud.snapshot()[version]?.content == .file(bytes("old")))
    }

    @Test(arguments: [("blocker/new/dir" as String?, Errno.notDirectory), ("dir/versions/dir", .invalidArgument),
                      (nil, .directoryNotEmpty)])
    func anOldEntryThatCannotMoveStopsTheInstallBeforeAnythingMoves(displacedTo: String?, errno: Errno) throws {
        let sides = Sides()
        try sides.local.write(path("dir"), "a file where a directory was")
        try sides.cloud.write(path("dir/old"), "x")
        try sides.cloud.write(path("blocker"), "x")
        let planned = try #require(try sides.cloud.metadata(of: path("dir")))
        let copy = try sides.prepare("dir")
        var expected = sides.cloud.snapshot()
        expected[copy.temporary] = nil
        expectErrno(errno) {
            _ = try sides.cloud.install(copy, at: path("dir"), replacing: planned, displacedTo: displacedTo.map(path),
                                        durable: true)
        }
        #expect(sides.cloud.snapshot() == expected)
    }

    @Test func aDirectoryMakesWayForAFileWhenKeptAsAVersionOrEmpty() throws {
        let sides = Sides()
        try sides.local.write(path("full"), "file")
        try sides.local.write(path("empty"), "file")
        try sides.cloud.write(path("full/old"), "x")
        try sides.cloud.makeDirectories(path("empty"))
        for (name, version) in [("full", path("v/full") as RelativePath?), ("empty", nil)] {
            let planned = try #require(try sides.cloud.metadata(of: path(name)))
            _ = try sides.cloud.install(try sides.prepare(name), at: path(name), replacing: planned, displacedTo: version,
                                        durable: true)
            #expect(sides.cloud.snapshot()[path(name)]?.content == .file(bytes("file")))
        }
        #expect(sides.cloud.snapshot()[path("v/full/old")] != nil)
    }

    @Test func aDiscardedCopyCannotBeInstalled() throws {
        let sides = Sides()
        try sides.local.write(path("file"), "x")
        let copy = try sides.prepare("file")
        sides.cloud.discard(copy)
        expectErrno(.noSuchFile) {
            _ = try sides.cloud.install(copy, at: path("file"), replacing: nil, displacedTo: nil, durable: true)
        }
        #expect(sides.cloud.snapshot().isEmpty)
    }

    @Test func discardOnlyEverRemovesTemporaryFiles() throws {
        let sides = Sides()
        try sides.local.write(path("file"), "x")
        try sides.cloud.write(path("precious"), "x")
        let copy = try sides.prepare("file")
        sides.cloud.discard(PreparedCopy(temporary: path("precious"), source: copy.source, bytesCopied: 1))
        sides.cloud.discard(copy)
        #expect(sides.cloud.snapshot().keys.sorted() == [path("precious")])
    }

    @Test func leftoverTemporaryFilesAreSweptAway() throws {
        let sides = Sides()
        try sides.local.write(path("a/file"), "x")
        try sides.cloud.makeDirectories(path("a"))
        try sides.cloud.write(path("a/.nimbus-tmp.txt"), "a user's file with a similar name")
        _ = try sides.prepare("a/file")
        _ = try sides.prepare("a/file")
        #expect(try sides.cloud.removeTemporaryFiles() == 2)
        #expect(sides.cloud.snapshot().keys.sorted() == [path("a"), path("a/.nimbus-tmp.txt")])
        #expect(try sides.cloud.removeTemporaryFiles() == 0)
    }
}
