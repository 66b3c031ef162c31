import NimbusSystem
import NimbusVocabulary
import Testing
@testable import NimbusSimulation

@Suite struct LookupTests {
    @Test func metadataIsNilForMissingEntriesEvenUnderMissingParents() throws {
        let fixture = Fixture()
        try fixture.populate(["dir/"])
        #expect(try fixture.fs.metadata(of: path("nothing")) == nil)
        #expect(try fixture.fs.metadata(of: path("dir/nothing")) == nil)
        #expect(try fixture.fs.metadata(of: path("nothing/below")) == nil)
    }

    @Test func aPathBelowAFileIsAbsentAndASymlinkInsideAPathIsAnError() throws {
        let fixture = Fixture()
        try fixture.populate(["file", "dir/", "link -> dir"])
        // As DiskFileSystem does: nothing can exist below a file.
        #expect(try fixture.fs.metadata(of: path("file/below")) == nil)
        // Symlinks are never followed, not even to a directory.
        expectErrno(.tooManySymlinks) { _ = try fixture.fs.metadata(of: path("link/below")) }
    }

    @Test func metadataDescribesEachKind() throws {
        let fixture = Fixture()
        try fixture.populate(["dir/", "dir/file", "link -> dir/file"])
        let now = fixture.clock.wallNow.nanoseconds
        let file = try #require(try fixture.fs.metadata(of: path("dir/file")))
        #expect(file.kind == .file && file.size == 8 && file.mode == 0o644 && file.mtime == now && file.device == 1)
        let link = try #require(try fixture.fs.metadata(of: path("link")))
        #expect(link.kind == .symlink && link.size == 8 && link.symlinkTarget == bytes("dir/file") && link.mode == 0o777)
        let directory = try #require(try fixture.fs.metadata(of: path("dir")))
        #expect(directory.kind == .directory && directory.size == 4096 && directory.mode == 0o755)
        #expect(try fixture.fs.metadata(of: .root)?.kind == .directory)
        #expect(Set([file.inode, link.inode, directory.inode]).count == 3)
    }

    @Test func mtimesComeFromTheClock() throws {
        let fixture = Fixture()
        try fixture.fs.write(path("a"), "1")
        let first = try #require(try fixture.fs.metadata(of: path("a"))).mtime
        fixture.clock.advance(by: .nanoseconds(1_500))
        try fixture.fs.write(path("a"), "2")
        #expect(try fixture.fs.metadata(of: path("a"))?.mtime == first + 1_500)
    }

    @Test func aDirectoryMtimeMovesWhenItsEntriesChangeButNotWhenAFileIsRewritten() throws {
        let fixture = Fixture()
        try fixture.populate(["dir/", "dir/a"])
        let directory = path("dir")
        func mtime() throws -> Int64? { try fixture.fs.metadata(of: directory)?.mtime }

        fixture.clock.advance(by: .nanoseconds(10))
        try fixture.fs.write(path("dir/a"), "rewritten in place")
        #expect(try mtime() == fixture.clock.wallNow.nanoseconds - 10)

        try fixture.fs.writeFile(path("dir/b"), contents: [], mode: 0o600)
        #expect(try mtime() == fixture.clock.wallNow.nanoseconds)
        fixture.clock.advance(by: .nanoseconds(10))
        try fixture.fs.removeFile(path("dir/b"))
        #expect(try mtime() == fixture.clock.wallNow.nanoseconds)
    }

    @Test func contentHashDependsOnTheBytesOnly() throws {
        let fixture = Fixture()
        try fixture.fs.write(path("a"), "same")
        try fixture.fs.write(path("b"), "same")
        try fixture.fs.write(path("c"), "diff")
        let a = try fixture.fs.contentHash(of: path("a"))
        #expect(a == (try fixture.fs.contentHash(of: path("b"))))
        #expect(a.value != (try fixture.fs.contentHash(of: path("c"))).value)
        #expect(a.size == 4)
        // The published FNV-1a test vector, so the hash is the one its comment names.
        #expect(fnv1a64(bytes("a")) == 0xAF63_DC4C_8601_EC8C)
    }

    @Test(arguments: [("missing", Errno.noSuchFile), ("link", .tooManySymlinks), ("secret", .permissionDenied)])
    func readingRefusesWhatIsNotAReadableFile(name: String, errno: Errno) throws {
        let fixture = Fixture()
        try fixture.populate(["link -> secret", "secret"])
        try fixture.fs.setAttributes(path("secret"), mode: 0o200, mtime: nil)
        expectErrno(errno) { _ = try fixture.fs.readFile(path(name), limit: 100) }
        expectErrno(errno) { _ = try fixture.fs.contentHash(of: path(name)) }
    }

    @Test func readingADirectoryIsNotReadingAFile() throws {
        let fixture = Fixture()
        try fixture.populate(["dir/"])
        expectCopyError(.notAFile(path("dir"))) { _ = try fixture.fs.readFile(path("dir"), limit: 100) }
        expectCopyError(.notAFile(path("dir"))) { _ = try fixture.fs.contentHash(of: path("dir")) }
    }

    @Test func readFileRefusesFilesOverTheLimit() throws {
        let fixture = Fixture()
        try fixture.fs.write(path("marker"), "12345")
        #expect(try fixture.fs.readFile(path("marker"), limit: 5) == bytes("12345"))
        expectErrno(.fileTooLarge) { _ = try fixture.fs.readFile(path("marker"), limit: 4) }
    }

    @Test func removingTheRootMakesEveryPathMissingUntilItIsMadeAgain() throws {
        let fixture = Fixture()
        try fixture.populate(["dir/", "dir/file"])
        try fixture.fs.removeRecursively(.root)
        #expect(try fixture.fs.metadata(of: .root) == nil)
        #expect(try fixture.fs.metadata(of: path("dir/file")) == nil)
        expectErrno(.noSuchFile) { _ = try fixture.fs.scan(.root) { _ in true } }
        expectErrno(.noSuchFile) { try fixture.fs.writeFile(path("x"), contents: [], mode: 0o644) }
        expectErrno(.noSuchFile) { _ = try fixture.fs.spaceInfo() }

        try fixture.fs.makeDirectories(.root)
        #expect(try fixture.fs.scan(.root) { _ in true }.entries.isEmpty)
        #expect(try fixture.fs.spaceInfo().available == 1 << 40)
    }
}
