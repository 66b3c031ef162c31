import NimbusSystem
import NimbusVocabulary
import Testing
@testable import NimbusSimulation

@Suite struct ScanTests {
    @Test func listsEverythingBelowParentsFirstWithoutFollowingSymlinks() throws {
        let fixture = Fixture()
        try fixture.populate(["b/", "b/c", "a.b", "a/", "a/z/", "a/z/deep", "link -> a"])
        let result = try fixture.fs.scan(.root) { _ in true }
        #expect(result.entries.map(\.path) == ["a", "a/z", "a/z/deep", "a.b", "b", "b/c", "link"].map(path))
        #expect(result.entries.map(\.metadata) == result.entries.map { try? fixture.fs.metadata(of: $0.path) })
        #expect(result.problems.isEmpty)
        let below = try fixture.fs.scan(path("a")) { _ in true }
        #expect(below.entries.map(\.path) == [path("a/z"), path("a/z/deep")])
    }

    @Test func aRefusedDirectoryIsReportedButNotEntered() throws {
        let fixture = Fixture()
        try fixture.populate(["keep/", "keep/file", "skip/", "skip/file"])
        var asked: [RelativePath] = []
        let result = try fixture.fs.scan(.root) { directory in
            asked.append(directory)
            return directory != path("skip")
        }
        #expect(asked == [path("keep"), path("skip")])
        #expect(result.entries.map(\.path) == [path("keep"), path("keep/file"), path("skip")])
    }

    @Test func anUnreadableSubdirectoryIsAProblemNotAnError() throws {
        let fixture = Fixture()
        try fixture.populate(["locked/", "locked/file", "open/", "open/file"])
        try fixture.fs.setAttributes(path("locked"), mode: 0o300, mtime: nil)
        let result = try fixture.fs.scan(.root) { _ in true }
        #expect(result.entries.map(\.path) == [path("locked"), path("open"), path("open/file")])
        #expect(result.problems.map(\.errno) == [.permissionDenied])
        #expect(result.problems.first?.path == "locked")
    }

    @Test(arguments: [("missing", Errno.noSuchFile), ("file", .notDirectory), ("link", .notDirectory),
                      ("locked", .permissionDenied)])
    func aDirectoryThatCannotBeListedThrows(name: String, errno: Errno) throws {
        let fixture = Fixture()
        try fixture.populate(["file", "link -> locked", "locked/"])
        try fixture.fs.setAttributes(path("locked"), mode: 0o000, mtime: nil)
        expectErrno(errno) { _ = try fixture.fs.scan(path(name)) { _ in true } }
    }

    @Test func descendMayCallBackIntoTheFilesystem() throws {
        let fixture = Fixture()
        try fixture.populate(["dir/", "dir/file"])
        let result = try fixture.fs.scan(.root) { directory in
            // A scan that edits as it goes (the lock is not held here) sees the edit.
            (try? fixture.fs.write(directory.appending(path("added")), "x")) != nil
        }
        #expect(result.entries.map(\.path) == ["dir", "dir/added", "dir/file"].map(path))
    }
}
