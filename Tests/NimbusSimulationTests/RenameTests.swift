import NimbusSystem
import NimbusVocabulary
import Testing
@testable import NimbusSimulation

/// One rename on the tree below and what Linux answers: nil for success.
struct RenameCase: Sendable, CustomTestStringConvertible {
    let from: String
    let to: String
    let replacing: Bool
    let errno: Errno?
    var testDescription: String {
        "\(from) → \(to)\(replacing ? " (replacing)" : "") = \(errno.map { "\($0)" } ?? "ok")"
    }
}

private let tree = ["a", "b", "empty/", "full/", "full/x", "full/sub/", "link -> a"]

@Suite struct RenameTests {
    @Test(arguments: [
        RenameCase(from: "a", to: "new", replacing: false, errno: nil),
        RenameCase(from: "a", to: "b", replacing: false, errno: .fileExists),
        RenameCase(from: "a", to: "b", replacing: true, errno: nil),
        RenameCase(from: "link", to: "b", replacing: true, errno: nil),
        RenameCase(from: "a", to: "link", replacing: true, errno: nil),
        RenameCase(from: "a", to: "empty", replacing: true, errno: .isDirectory),
        RenameCase(from: "empty", to: "a", replacing: true, errno: .notDirectory),
        RenameCase(from: "empty", to: "full", replacing: true, errno: .directoryNotEmpty),
        RenameCase(from: "full", to: "empty", replacing: true, errno: nil),
        RenameCase(from: "full", to: "empty", replacing: false, errno: .fileExists),
        RenameCase(from: "full", to: "full/inside", replacing: false, errno: .invalidArgument),
        RenameCase(from: "full", to: "full/sub/deeper", replacing: true, errno: .invalidArgument),
        RenameCase(from: "full/x", to: "full", replacing: true, errno: .directoryNotEmpty),
        RenameCase(from: "a", to: "a", replacing: true, errno: nil),
        RenameCase(from: "a", to: "a", replacing: false, errno: .fileExists),
        RenameCase(from: "missing", to: "new", replacing: false, errno: .noSuchFile),
        RenameCase(from: "a", to: "missing/new", replacing: false, errno: .noSuchFile),
        RenameCase(from: "a", to: "b/new", replacing: false, errno: .notDirectory),
        RenameCase(from: "a", to: "link/new", replacing: false, errno: .tooManySymlinks),
        RenameCase(from: "", to: "new", replacing: false, errno: .busy),
    ])
    func renameFollowsLinux(_ rename: RenameCase) throws {
        let fixture = Fixture()
        try fixture.populate(tree)
        let before = fixture.fs.snapshot()
        fixture.clock.advance(by: .nanoseconds(1))
        let from = path(rename.from), to = path(rename.to)
        guard let errno = rename.errno else {
            try fixture.fs.rename(from, to: to, replacing: rename.replacing)
            let after = fixture.fs.snapshot()
            let moved = try #require(before[from])
            #expect(after[to]?.metadata == moved.metadata, "the entry keeps its inode, mtime and mode")
            #expect(after[to]?.content == moved.content)
            if from != to { #expect(after[from] == nil) }
            return
        }
        expectErrno(errno) { try fixture.fs.rename(from, to: to, replacing: rename.replacing) }
        #expect(fixture.fs.snapshot() == before)
    }

    @Test func movingADirectoryMovesItsContentsAndBothParentsMtimes() throws {
        let fixture = Fixture()
        try fixture.populate(["src/", "src/dir/", "src/dir/file", "dst/"])
        let before = fixture.fs.snapshot()
        fixture.clock.advance(by: .nanoseconds(100))
        try fixture.fs.rename(path("src/dir"), to: path("dst/dir"), replacing: false)
        let after = fixture.fs.snapshot()
        #expect(after[path("dst/dir/file")]?.metadata == before[path("src/dir/file")]?.metadata)
        #expect(after[path("dst/dir")]?.metadata.inode == before[path("src/dir")]?.metadata.inode)
        #expect(after[path("src")]?.metadata.mtime == fixture.clock.wallNow.nanoseconds)
        #expect(after[path("dst")]?.metadata.mtime == fixture.clock.wallNow.nanoseconds)
        #expect(after.keys.sorted() == [path("dst"), path("dst/dir"), path("dst/dir/file"), path("src")])
    }

    @Test func replacingAFileFreesItsSpace() throws {
        let fixture = Fixture(capacity: 100)
        try fixture.fs.write(path("big"), [UInt8](repeating: 1, count: 60))
        try fixture.fs.write(path("small"), [UInt8](repeating: 2, count: 10))
        #expect(try fixture.fs.spaceInfo().available == 30)
        try fixture.fs.rename(path("small"), to: path("big"), replacing: true)
        #expect(try fixture.fs.spaceInfo() == (available: 90, total: 100))
    }
}
