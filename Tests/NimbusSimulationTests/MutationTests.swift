import NimbusSystem
import NimbusVocabulary
import Testing
@testable import NimbusSimulation

/// One call on the standard tree and the errno Linux gives it.
struct ErrnoCase: Sendable, CustomTestStringConvertible {
    let call: String
    let errno: Errno
    let run: @Sendable (MemoryFileSystem) throws -> Void
    var testDescription: String { "\(call) → \(errno)" }
}

/// file, dir/ (holding dir/inner), empty/, link → file
private let standardTree = ["file", "dir/", "dir/inner", "empty/", "link -> file"]

@Suite struct MutationTests {
    @Test(arguments: [
        ErrnoCase(call: "mkdir existing file", errno: .fileExists) { try $0.makeDirectory(path("file"), mode: 0o755) },
        ErrnoCase(call: "mkdir existing dir", errno: .fileExists) { try $0.makeDirectory(path("dir"), mode: 0o755) },
        ErrnoCase(call: "mkdir existing link", errno: .fileExists) { try $0.makeDirectory(path("link"), mode: 0o755) },
        ErrnoCase(call: "mkdir root", errno: .fileExists) { try $0.makeDirectory(.root, mode: 0o755) },
        ErrnoCase(call: "mkdir missing parent", errno: .noSuchFile) { try $0.makeDirectory(path("no/new"), mode: 0o755) },
        ErrnoCase(call: "mkdir under file", errno: .notDirectory) { try $0.makeDirectory(path("file/new"), mode: 0o755) },
        ErrnoCase(call: "unlink dir", errno: .isDirectory) { try $0.removeFile(path("empty")) },
        ErrnoCase(call: "unlink root", errno: .isDirectory) { try $0.removeFile(.root) },
        ErrnoCase(call: "unlink missing", errno: .noSuchFile) { try $0.removeFile(path("missing")) },
        ErrnoCase(call: "rmdir non-empty", errno: .directoryNotEmpty) { try $0.removeDirectory(path("dir")) },
        ErrnoCase(call: "rmdir file", errno: .notDirectory) { try $0.removeDirectory(path("file")) },
        ErrnoCase(call: "rmdir link", errno: .notDirectory) { try $0.removeDirectory(path("link")) },
        ErrnoCase(call: "rmdir missing", errno: .noSuchFile) { try $0.removeDirectory(path("missing")) },
        ErrnoCase(call: "rmdir root", errno: .busy) { try $0.removeDirectory(.root) },
        ErrnoCase(call: "symlink existing", errno: .fileExists) { try $0.makeSymlink(path("file"), target: bytes("x")) },
        ErrnoCase(call: "symlink empty target", errno: .noSuchFile) { try $0.makeSymlink(path("new"), target: []) },
        ErrnoCase(call: "writeFile over dir", errno: .isDirectory) { try $0.writeFile(path("empty"), contents: [], mode: 0o644) },
        ErrnoCase(call: "writeFile missing parent", errno: .noSuchFile) { try $0.writeFile(path("no/f"), contents: [], mode: 0o644) },
        ErrnoCase(call: "chmod missing", errno: .noSuchFile) { try $0.setAttributes(path("missing"), mode: 0o600, mtime: nil) },
    ])
    func failsAsLinuxDoesAndChangesNothing(_ errorCase: ErrnoCase) throws {
        let fixture = Fixture()
        try fixture.populate(standardTree)
        let before = fixture.fs.snapshot()
        fixture.clock.advance(by: .nanoseconds(1))
        expectErrno(errorCase.errno) { try errorCase.run(fixture.fs) }
        #expect(fixture.fs.snapshot() == before)
    }

    @Test func successfulCallsDoWhatTheySay() throws {
        let fixture = Fixture()
        try fixture.populate(standardTree)
        try fixture.fs.makeDirectory(path("made"), mode: 0o700)
        try fixture.fs.removeFile(path("link"))
        try fixture.fs.removeDirectory(path("empty"))
        try fixture.fs.makeSymlink(path("dangling"), target: bytes("../outside"))
        let nodes = fixture.fs.snapshot()
        #expect(nodes[path("made")]?.content == .directory && nodes[path("made")]?.metadata.mode == 0o700)
        #expect(nodes[path("link")] == nil && nodes[path("empty")] == nil)
        #expect(nodes[path("dangling")]?.content == .symlink(target: bytes("../outside")))
    }

    @Test func writeFileReplacesAtomicallyWithANewInode() throws {
        let fixture = Fixture()
        try fixture.populate(["file", "link -> file"])
        let old = try #require(try fixture.fs.metadata(of: path("file")))
        fixture.clock.advance(by: .nanoseconds(5))
        try fixture.fs.writeFile(path("file"), contents: bytes("new"), mode: 0o640)
        let new = try #require(try fixture.fs.metadata(of: path("file")))
        #expect(new.inode != old.inode && new.mode == 0o640 && new.mtime == fixture.clock.wallNow.nanoseconds && new.size == 3)
        // A symlink in the way is replaced, not followed.
        try fixture.fs.writeFile(path("link"), contents: bytes("x"), mode: 0o644)
        #expect(try fixture.fs.metadata(of: path("link"))?.kind == .file)
        #expect(try fixture.fs.readFile(path("file"), limit: 10) == bytes("new"))
    }

    @Test func editsInPlaceKeepTheInode() throws {
        let fixture = Fixture()
        try fixture.fs.write(path("deep/dir/file"), "one")
        let inode = try #require(try fixture.fs.metadata(of: path("deep/dir/file"))).inode
        fixture.clock.advance(by: .nanoseconds(7))
        try fixture.fs.append(path("deep/dir/file"), bytes("two"))
        let after = try #require(try fixture.fs.metadata(of: path("deep/dir/file")))
        #expect(after.inode == inode && after.size == 6 && after.mtime == fixture.clock.wallNow.nanoseconds)
        #expect(try fixture.fs.readFile(path("deep/dir/file"), limit: 10) == bytes("onetwo"))
        try fixture.fs.removeRecursively(path("deep"))
        #expect(fixture.fs.snapshot().isEmpty)
    }

    @Test func setAttributesSetsModeAndMtimeButNoSymlinkMode() throws {
        let fixture = Fixture()
        try fixture.populate(["file", "link -> file"])
        try fixture.fs.setAttributes(path("file"), mode: 0o100600, mtime: 42)
        try fixture.fs.setAttributes(path("link"), mode: 0o600, mtime: 43)
        #expect(try fixture.fs.metadata(of: path("file"))?.mode == 0o600)
        #expect(try fixture.fs.metadata(of: path("file"))?.mtime == 42)
        // Linux symlinks have no mode of their own: DiskFileSystem ignores one given.
        #expect(try fixture.fs.metadata(of: path("link"))?.mode == 0o777)
        #expect(try fixture.fs.metadata(of: path("link"))?.mtime == 43)
    }

    @Test func freedInodeNumbersAreReusedLikeExt4UnlessDisabled() throws {
        for reuses in [true, false] {
            let fixture = Fixture(reusesFreedInodes: reuses)
            try fixture.fs.write(path("a"), "a")
            let freed = try #require(try fixture.fs.metadata(of: path("a"))).inode
            try fixture.fs.removeFile(path("a"))
            try fixture.fs.write(path("b"), "b")
            #expect((try fixture.fs.metadata(of: path("b"))?.inode == freed) == reuses)
        }
    }

    @Test func concurrentEditsAreSerialised() async throws {
        let fs = MemoryFileSystem(time: { 0 })
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask {
                    try? fs.append(path("log"), [UInt8(index % 256)])
                    try? fs.write(path("dir\(index % 7)/file\(index)"), "x")
                }
            }
        }
        let nodes = fs.snapshot()
        #expect(nodes[path("log")]?.metadata.size == 200)
        #expect(nodes.count == 1 + 7 + 200)
        #expect(Set(nodes.values.map(\.metadata.inode)).count == nodes.count)
        #expect(try fs.spaceInfo().available == (1 << 40) - 400)
    }

    @Test func extendedAttributesBelongToTheInode() throws {
        let fixture = Fixture()
        try fixture.populate(["file", "link -> file"])
        let name = "user.nimbus.state"
        #expect(try fixture.fs.extendedAttribute(name, of: path("file")) == nil)
        try fixture.fs.setExtendedAttribute(name, of: path("file"), to: [1, 2])
        let mtime = try fixture.fs.metadata(of: path("file"))?.mtime
        try fixture.fs.rename(path("file"), to: path("moved"), replacing: false)
        #expect(try fixture.fs.extendedAttribute(name, of: path("moved")) == [1, 2])
        #expect(try fixture.fs.metadata(of: path("moved"))?.mtime == mtime)
        try fixture.fs.removeExtendedAttribute(name, of: path("moved"))
        try fixture.fs.removeExtendedAttribute(name, of: path("moved"))  // absent: still fine
        #expect(try fixture.fs.extendedAttribute(name, of: path("moved")) == nil)

        expectErrno(.notSupported) { try fixture.fs.setExtendedAttribute("trusted.x", of: path("moved"), to: []) }
        expectErrno(.notSupported) { try fixture.fs.setExtendedAttribute(name, of: path("link"), to: []) }
        expectErrno(.noSuchFile) { _ = try fixture.fs.extendedAttribute(name, of: path("missing")) }
        #expect(try fixture.fs.extendedAttribute(name, of: path("link")) == nil)
    }
}
