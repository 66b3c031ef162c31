import CNimbus
import Glibc
import NimbusVocabulary
import Testing
@testable import NimbusSystem

@Suite struct ScannerTests {
    @Test func reportsEveryKindWithoutFollowingSymlinks() throws {
        try Scratch.with { scratch in
            let root = scratch.directory
            let odd = SystemPath(bytes: [0x66, 0xFF, 0xFE])
            let longTarget = [UInt8](repeating: UInt8(ascii: "t"), count: 4095)
            try scratch.write("file", Array("twelve bytes".utf8), mode: 0o640)
            try root.setModificationTime(of: "file", 1_600_000_000_123_456_789)
            try root.makeDirectory("dir")
            try root.setPermissions(of: "dir", 0o750)
            try root.makeDirectory("dir/sub")
            try scratch.write("dir/sub/deep", [1, 2, 3], mode: 0o600)
            try root.makeSymlink("dir/up", target: Array("../file".utf8))
            try root.makeSymlink("dangling", target: Array("nowhere".utf8))
            try root.makeSymlink("outside", target: Array("/etc".utf8))
            try root.makeSymlink("long", target: longTarget)
            #expect(mkfifoat(root.rawValue, "fifo", 0o644) == 0)
            try scratch.write(odd, [9])

            let result = try Scanner(root: root).scan(.root) { _ in true }

            #expect(result.problems.isEmpty)
            var found: [[UInt8]: FileMetadata] = [:]
            for (path, metadata) in result.entries { found[path.bytes] = metadata }
            let expected: Set<[UInt8]> = Set(["file", "dir", "dir/sub", "dir/sub/deep", "dir/up", "dangling",
                                               "outside", "long", "fifo"].map { Array($0.utf8) } + [odd.bytes])
            #expect(Set(found.keys) == expected)
            #expect(result.entries.count == expected.count)

            let file = try #require(found[Array("file".utf8)])
            let status = try Sys.fstatat(root.rawValue, "file", AT_SYMLINK_NOFOLLOW)
            #expect(file == FileMetadata(kind: .file, size: 12, mtime: 1_600_000_000_123_456_789, mode: 0o640,
                                         inode: UInt64(status.st_ino), device: UInt64(status.st_dev)))
            #expect(found[Array("dir".utf8)]?.kind == .directory)
            #expect(found[Array("dir".utf8)]?.mode == 0o750)
            #expect(found[Array("dir/sub/deep".utf8)]?.mode == 0o600)
            #expect(found[Array("dir/sub/deep".utf8)]?.size == 3)
            #expect(found[Array("dir/up".utf8)]?.symlinkTarget == Array("../file".utf8))
            #expect(found[Array("dangling".utf8)]?.symlinkTarget == Array("nowhere".utf8))
            #expect(found[Array("outside".utf8)]?.kind == .symlink)
            #expect(found[Array("outside".utf8)]?.symlinkTarget == Array("/etc".utf8))
            #expect(found[Array("long".utf8)]?.symlinkTarget == longTarget)
            #expect(found[Array("fifo".utf8)]?.kind == .special)
            #expect(found[odd.bytes]?.size == 1)
            #expect(found[Array("file".utf8)]?.symlinkTarget == nil)

            for (index, entry) in result.entries.enumerated() where entry.path.depth > 1 {
                let parent = result.entries.firstIndex { $0.path == entry.path.parent }
                #expect(parent != nil && parent! < index, "\(entry.path) is listed before its parent")
            }
        }
    }

    @Test func descendDecidesWhichDirectoriesAreEntered() throws {
        try Scratch.with { scratch in
            for directory in ["a", "a/b", "c", "c/d"] { try scratch.directory.makeDirectory(SystemPath(directory)) }
            for file in ["a/x", "a/b/y", "c/z", "c/d/w"] { try scratch.write(SystemPath(file), []) }
            let scanner = Scanner(root: scratch.directory)

            var asked: [RelativePath] = []
            let result = try scanner.scan(.root) { directory in
                asked.append(directory)
                return directory != (try? path("c"))
            }
            #expect(Set(asked) == Set(try ["a", "a/b", "c"].map(path)))
            #expect(Set(result.entries.map(\.path)) == Set(try ["a", "a/x", "a/b", "a/b/y", "c"].map(path)))

            let below = try scanner.scan(path("a")) { _ in true }
            #expect(Set(below.entries.map(\.path)) == Set(try ["a/x", "a/b", "a/b/y"].map(path)))
        }
    }

    /// A stop (the daemon's SIGTERM) thrown by `descend` ends the walk at once and comes out
    /// as it is, not as a problem of the directory it was asked about: the walk of a big
    /// tree waits for one directory's listing, not the whole tree's.
    @Test func whatDescendThrowsEndsTheWalk() throws {
        try Scratch.with { scratch in
            for index in 0..<20 { try scratch.directory.makeDirectory(SystemPath("d\(index)")) }
            var asked = 0
            #expect(throws: CancellationError.self) {
                _ = try Scanner(root: scratch.directory).scan(.root) { _ in
                    asked += 1
                    if asked == 3 { throw CancellationError() }
                    return true
                }
            }
            #expect(asked == 3, "no directory is asked about after the stop")
        }
    }

    /// One flat folder of many files (issue 15: 100 000 entries were listed whole before the
    /// stop was looked at, at the next folder): the checkpoint is asked every
    /// `CheckpointInterval.scanEntries` entries inside the listing, and what it throws ends
    /// the walk there.
    @Test func aCheckpointEndsTheWalkInsideOneListing() throws {
        try Scratch.with { scratch in
            let count = CheckpointInterval.scanEntries * 5 / 2
            for index in 0..<count { try scratch.write(SystemPath("f\(index)"), []) }
            var asked = 0
            let all = try Scanner(root: scratch.directory).scan(.root, descend: { _ in true }) { asked += 1 }
            #expect(all.entries.count == count && asked == 2, "asked \(asked) times for \(all.entries.count) entries")

            asked = 0
            #expect(throws: CancellationError.self) {
                _ = try Scanner(root: scratch.directory).scan(.root, descend: { _ in true }) {
                    asked += 1
                    throw CancellationError()
                }
            }
            #expect(asked == 1, "the walk ends at the first checkpoint")
        }
    }

    @Test func aDirectoryThatVanishesIsAProblemAndTheWalkGoesOn() throws {
        try Scratch.with { scratch in
            try scratch.directory.makeDirectory("gone")
            try scratch.directory.makeDirectory("kept")
            try scratch.write("kept/file", [])
            // descend runs between listing "gone" and opening it: a deterministic race.
            let result = try Scanner(root: scratch.directory).scan(.root) { directory in
                if directory.description == "gone" { try? scratch.directory.removeDirectory("gone") }
                return true
            }
            #expect(result.problems == [Errno.noSuchFile.at("open", "gone")])
            #expect(Set(result.entries.map(\.path)) == Set(try ["gone", "kept", "kept/file"].map(path)))
        }
    }

    /// As root, permission bits are not checked (CAP_DAC_OVERRIDE), so chmod 000 alone proves
    /// nothing. setfsuid(2) changes the identity used for file access of this thread only, and
    /// leaving uid 0 drops the capabilities that bypass the checks; the test body is synchronous,
    /// so it stays on this thread, and other tests running in parallel are unaffected.
    @Test func anUnreadableDirectoryIsAProblemAndTheWalkGoesOn() throws {
        try Scratch.with { scratch in
            try scratch.directory.setPermissions(0o755)
            try scratch.directory.makeDirectory("locked")
            try scratch.write("locked/secret", [])
            try scratch.directory.makeDirectory("open")
            try scratch.write("open/file", [])
            try scratch.directory.makeDirectory("listable")
            try scratch.write("listable/file", [])
            try scratch.directory.setPermissions(of: "locked", 0)
            // Readable but not searchable: readdir works, fstatat of an entry does not.
            try scratch.directory.setPermissions(of: "listable", 0o444)

            let result: ScanResult
            if getuid() == 0 {
                let nobody: UInt32 = 65534
                _ = setfsuid(nobody)
                defer { _ = setfsuid(0) }
                // setfsuid reports the previous value; an invalid id (-1) changes nothing, so it reads it.
                try #require(setfsuid(UInt32.max) == nobody, "could not drop file-access privileges: EACCES not tested")
                result = try Scanner(root: scratch.directory).scan(.root) { _ in true }
            } else {
                result = try Scanner(root: scratch.directory).scan(.root) { _ in true }
            }

            #expect(Set(result.problems) == [Errno.permissionDenied.at("open", "locked"),
                                             Errno.permissionDenied.at("lstat", "listable/file")])
            #expect(Set(result.entries.map(\.path)) == Set(try ["locked", "open", "open/file", "listable"].map(path)))
        }
    }

    @Test func theScannedDirectoryItselfMustBeReachable() throws {
        try Scratch.with { scratch in
            try scratch.directory.makeDirectory("real")
            try scratch.directory.makeSymlink("link", target: Array("real".utf8))
            let scanner = Scanner(root: scratch.directory)
            // O_DIRECTORY | O_NOFOLLOW on a symlink: the kernel answers ENOTDIR.
            #expect(throws: Errno.notDirectory.at("open", "link")) { try scanner.scan(path("link")) { _ in true } }
            #expect(throws: Errno.tooManySymlinks.at("open", "link/below")) {
                try scanner.scan(path("link/below")) { _ in true }
            }
            #expect(throws: Errno.noSuchFile.at("open", "missing")) { try scanner.scan(path("missing")) { _ in true } }
        }
    }
}
