import Foundation
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
import NimbusVocabulary
@testable import NimbusDaemon

/// A local file a sync deletes is kept for the mass-delete guard's window (see
/// SyncEngine+KeptDeletions.swift), even when its name in the holding folder is taken by the
/// other kind: a folder `x` and then a file `x` deleted within the window.
@Suite struct KeptDeletionRoomTests {
    static let fileContent = "a file named like the folder was\n"

    /// A pair where `x/y.txt` (in the folder `x`, mode 0750) and then a file `x` were deleted
    /// in the cloud within one window.
    static func pairAfterBothDeletions() throws -> Pair {
        let pair = Pair()
        try pair.local.makeDirectory(rp("x"), mode: 0o750)
        try pair.local.write(rp("x/y.txt"), Array("inside the folder\n".utf8))
        try pair.local.write(rp("stays.txt"), Array("stays\n".utf8))
        pair.engine.start()
        try #require(pair.content(pair.cloud, "x/y.txt") != nil)
        try pair.cloud.removeFile(rp("x/y.txt"))
        try pair.cloud.removeDirectory(rp("x"))
        pair.sync()
        try #require(pair.local.snapshot()[rp("x")] == nil)
        try pair.cloud.write(rp("x"), Array(fileContent.utf8))
        pair.sync()
        try #require(pair.content(pair.local, "x") == fileContent)
        try pair.cloud.removeFile(rp("x"))
        pair.sync()
        try #require(pair.local.snapshot()[rp("x")] == nil)
        return pair
    }

    /// Where the local folder holds `content` (skipping temporary files).
    static func places(of content: String, in fs: MemoryFileSystem) -> [RelativePath] {
        fs.snapshot().compactMap { path, node in
            guard case .file(let bytes) = node.content, bytes == Array(content.utf8) else { return nil }
            return path
        }
    }

    @Test func aFileWhoseHoldingNameIsAFolderIsKeptInAnotherHoldingFolder() throws {
        let pair = try Self.pairAfterBothDeletions()
        let kept = Self.places(of: Self.fileContent, in: pair.local)
        #expect(kept.count == 1 && kept.allSatisfy { TemporaryName.isTemporary($0.components[0]) && $0.name == Array("x".utf8) },
                "the file x must be kept in a holding folder, not unlinked: \(kept)")
        #expect(pair.content(pair.local, RootMarkers.deletedHolding.description + "/x/y.txt") == "inside the folder\n",
                "what was kept before stays")
        #expect(pair.local.snapshot()[RootMarkers.deletedHolding.appending(rp("x"))]?.metadata.mode == 0o750,
                "the folder's stand-in has the folder's mode")
        pair.sync()
        #expect(Self.places(of: Self.fileContent, in: pair.cloud).isEmpty, "kept files are never uploaded")
        #expect(try pair.engine.listEntries(under: .root, recursive: true).map(\.path) == [rp("stays.txt")])
    }

    @Test func bothAreAdoptedAfterARestartAndGoAWindowLater() throws {
        let pair = try Self.pairAfterBothDeletions()
        let left = try Self.restartThenLetTheWindowPass(pair) {
            #expect(Self.places(of: Self.fileContent, in: pair.local).count == 1, "a start keeps what the holding folders hold")
        }
        #expect(left == [rp("stays.txt")], "every holding folder goes once the window has passed: \(left)")
    }

    /// A new engine on the pair's folders and journal (a restart), started; `check` runs then,
    /// and the window is let pass. Returns what is left in the local folder.
    static func restartThenLetTheWindowPass(_ pair: Pair, check: () -> Void) throws -> [RelativePath] {
        let restarted = SyncEngine(local: pair.local, cloud: pair.cloud, store: pair.store, records: pair.store.committed, clock: pair.clock,
                                   settings: pair.engine.settings, log: .silent, rootNames: ("L", "C"))
        pair.clock.advance(by: .seconds(1))
        restarted.start()
        check()
        let due = try #require(restarted.nextKeptRelease)
        pair.clock.advance(by: due - pair.clock.monotonicNow)
        restarted.releaseExpiredDeletions()
        return pair.local.snapshot().keys.filter { $0 != RootMarkers.local }
    }

    /// The same on a real disk, where a rename onto a folder or through a file fails with
    /// EEXIST or ENOTDIR.
    @Test func onDiskTheFileIsKeptInTheSecondHoldingFolder() throws {
        let pair = try DiskPair()
        try pair.plant("local/x/y.txt", "inside the folder\n")
        try pair.plant("local/stays.txt", "stays\n")
        pair.engine.start()
        try #require(pair.exists("cloud/x/y.txt"))
        try FileManager.default.removeItem(atPath: pair.root + "/cloud/x")
        pair.engine.sync(nil)
        try #require(pair.exists("local/.nimbus-tmp-deleted/x/y.txt") && !pair.exists("local/x"))
        try pair.plant("cloud/x", Self.fileContent)
        pair.engine.sync(nil)
        try #require(pair.exists("local/x"))
        // Written by the sync just now: a child that another test forked meanwhile may still
        // hold it, and a file open for writing is not deleted (it stayed, under load).
        try pair.waitUntilClosedElsewhere("local/x")
        try FileManager.default.removeItem(atPath: pair.root + "/cloud/x")
        pair.engine.sync(nil)
        #expect(!pair.exists("local/x"))
        #expect(try String(contentsOfFile: pair.root + "/local/.nimbus-tmp-deleted-2/x", encoding: .utf8) == Self.fileContent)
        #expect(pair.exists("local/.nimbus-tmp-deleted/x/y.txt"))
    }
}

/// Past the numbered holding folders: `a`, then `a/a`, then `a/a/a`… deleted one after the
/// other within the window each need a holding folder where the names above are folders,
/// one more each time; the ninth and later (before: unlinked, with a warning) are kept too.
@Suite struct KeptDeletionSpillTests {
    static let depth = RootMarkers.deletedHoldingCount + 3

    static func name(_ depth: Int) -> String { Array(repeating: "a", count: depth).joined(separator: "/") }

    /// Each of `a`, `a/a`, … arrives from the cloud, then is deleted there (with its folders).
    static func pairAfterEveryDeletion() throws -> Pair {
        let pair = Pair()
        try pair.local.write(rp("stays.txt"), Array("stays\n".utf8))
        pair.engine.start()
        for depth in 1...Self.depth {
            try pair.cloud.write(rp(name(depth)), Array("depth \(depth)\n".utf8))
            pair.sync()
            try #require(pair.content(pair.local, name(depth)) == "depth \(depth)\n")
            try pair.cloud.removeRecursively(rp("a"))
            pair.sync()
            try #require(pair.local.snapshot()[rp("a")] == nil, "depth \(depth)")
        }
        return pair
    }

    @Test func everyAlternationKeepsItsContent() throws {
        let pair = try Self.pairAfterEveryDeletion()
        for depth in 1...Self.depth {
            let kept = KeptDeletionRoomTests.places(of: "depth \(depth)\n", in: pair.local)
            #expect(kept.count == 1 && kept.allSatisfy { TemporaryName.isTemporary($0.components[0]) }, "depth \(depth): \(kept)")
        }
        #expect(pair.local.snapshot()[RootMarkers.deletedSpill] != nil, "the ninth and later are in the spill")
        #expect(try pair.engine.listEntries(under: .root, recursive: true).map(\.path) == [rp("stays.txt")])
        pair.sync()
        #expect(pair.cloud.snapshot().keys.allSatisfy { !TemporaryName.isTemporary($0.components.first ?? []) }, "kept files are never uploaded")
    }

    @Test func aRestartAdoptsTheSpillAndAWindowLaterEverythingGoes() throws {
        let pair = try Self.pairAfterEveryDeletion()
        let left = try KeptDeletionRoomTests.restartThenLetTheWindowPass(pair) {
            for depth in 1...Self.depth {
                #expect(KeptDeletionRoomTests.places(of: "depth \(depth)\n", in: pair.local).count == 1, "a start keeps depth \(depth)")
            }
        }
        #expect(left == [rp("stays.txt")], "every holding folder and the spill go once the window has passed: \(left)")
    }

    /// The guard trips on a mass deletion right after: its revert brings back the chain as it
    /// was last, `a/a/…/a` whose file was kept in the spill, at its own path. (Each shorter
    /// name was deleted again later, as a folder: that later deletion is the one a revert
    /// undoes, `AppliedDeletions.restoreOrder`; the files kept before stay kept for the window.)
    @Test func aRevertBringsBackWhatTheSpillKept() throws {
        let pair = try Self.pairAfterEveryDeletion()
        for index in 0..<150 { try pair.local.write(rp("many/f\(index)"), Array("f\(index)".utf8)) }
        pair.sync()
        try pair.cloud.removeRecursively(rp("many"))
        pair.sync()
        try #require(pair.engine.status.heldDeletes > 0)
        let deepest = KeptDeletionRoomTests.places(of: "depth \(Self.depth)\n", in: pair.local)
        try #require(deepest.count == 1 && RootMarkers.deletedSpill.contains(deepest[0]), "\(deepest)")
        #expect(pair.engine.revertDeletes() > 0)
        #expect(pair.content(pair.local, Self.name(Self.depth)) == "depth \(Self.depth)\n")
        #expect(KeptDeletionRoomTests.places(of: "depth \(Self.depth)\n", in: pair.local) == [rp(Self.name(Self.depth))])
        pair.sync()
        #expect(pair.content(pair.cloud, Self.name(Self.depth)) == "depth \(Self.depth)\n")
    }
}
