import Glibc
import NimbusTestSupport
import NimbusVocabulary
import Testing
@testable import NimbusSystem

@Suite struct DiskFileSystemTests {
    /// A DiskFileSystem on `<scratch>/root`.
    private func withRoot(temporaryDirectory: String? = nil,
                          _ body: (Scratch, DiskFileSystem) throws -> Void) throws {
        try Scratch.with { scratch in
            try scratch.directory.makeDirectory("root")
            try body(scratch, DiskFileSystem(root: scratch.path.appending("root"),
                                             temporaryDirectory: try temporaryDirectory.map(path)))
        }
    }

    @Test func metadataOfEachKindAndOfNothing() throws {
        try withRoot { scratch, fs in
            try scratch.write("root/file", Array("abc".utf8), mode: 0o604)
            try scratch.directory.makeSymlink("root/link", target: [0x66, 0xFF])
            let file = try #require(try fs.metadata(of: path("file")))
            #expect(file.kind == .file && file.size == 3 && file.mode == 0o604)
            #expect(try fs.metadata(of: path("link"))?.symlinkTarget == [0x66, 0xFF])
            #expect(try fs.metadata(of: .root)?.kind == .directory)
            #expect(try fs.metadata(of: path("missing")) == nil)
            #expect(try fs.metadata(of: path("missing/below")) == nil)
            #expect(try fs.metadata(of: path("file/below")) == nil)
        }
    }

    /// The kernel's answer (a write lease) to "is this file open anywhere", which also sees
    /// programs whose /proc entries this user may not read.
    @Test func aFileOpenForReadingAnywhereIsSeenOpen() throws {
        try withRoot { scratch, fs in
            try scratch.write("root/file", Array("abc".utf8), mode: 0o644)
            #expect(fs.isOpenElsewhere(try path("file")) == false)
            let reader = try FileDescriptor.open("root/file", relativeTo: scratch.directory)
            let file = try path("file")
            reader.closeAfter { #expect(fs.isOpenElsewhere(file) == true) }
            // A child another test spawns may hold a copy of the descriptor until its exec.
            #expect(Polling.spin(timeout: .seconds(10), interval: .milliseconds(1)) { fs.isOpenElsewhere(file) == false })
            #expect(fs.isOpenElsewhere(try path("missing")) == nil)
        }
    }

    @Test func nothingOutsideTheRootCanBeReached() throws {
        try withRoot { scratch, fs in
            try scratch.directory.makeSymlink("root/etc", target: Array("/etc".utf8))
            try scratch.directory.makeDirectory("root/real")
            try scratch.write("root/real/file", Array("inside".utf8))
            try scratch.directory.makeSymlink("root/alias", target: Array("real".utf8))
            let refused = Errno.tooManySymlinks

            #expect(throws: refused.at("lstat", "etc/passwd")) { try fs.metadata(of: path("etc/passwd")) }
            #expect(throws: refused.at("open", "etc/passwd")) { try fs.readFile(path("etc/passwd"), limit: 1 << 20) }
            #expect(throws: refused.at("open", "etc/passwd")) { try fs.contentHash(of: path("etc/passwd")) }
            #expect(throws: refused.at("unlink", "etc/passwd")) { try fs.removeFile(path("etc/passwd")) }
            #expect(throws: refused.at("mkdir", "etc/nimbus-test")) {
                try fs.makeDirectory(path("etc/nimbus-test"), mode: 0o755)
            }
            #expect(throws: SystemError.self) {
                try fs.writeFile(path("etc/nimbus-test"), contents: [1], mode: 0o644)
            }
            #expect(throws: refused.at("setattr", "etc/passwd")) {
                try fs.setAttributes(path("etc/passwd"), mode: 0o777, mtime: 0)
            }
            #expect(throws: refused.at("lstat", "alias/file")) { try fs.metadata(of: path("alias/file")) }
            // O_DIRECTORY | O_NOFOLLOW on a symlink: the kernel answers ENOTDIR.
            #expect(throws: Errno.notDirectory.at("open", "alias")) { try fs.scan(path("alias")) { _ in true } }
            #expect(throws: refused.at("open", "alias")) { try fs.readFile(path("alias"), limit: 10) }
            #expect((try? FileDescriptor.open("/etc/nimbus-test")) == nil)
            #expect((try FileDescriptor.open("/etc/passwd")).rawValue >= 0)

            // A mode for a symlink is ignored (Linux symlinks have none); its target is untouched.
            let before = try #require(try fs.metadata(of: path("real/file")))
            try fs.setAttributes(path("alias"), mode: 0o777, mtime: 1_000_000_000_000_000_001)
            #expect(try fs.metadata(of: path("alias"))?.mtime == 1_000_000_000_000_000_001)
            #expect(try fs.metadata(of: path("real/file")) == before)
        }
    }

    @Test(arguments: [nil, ".nimbus/tmp"] as [String?])
    func writeFileIsAtomicAndReadFileHasALimit(temporaryDirectory: String?) throws {
        try withRoot(temporaryDirectory: temporaryDirectory) { scratch, fs in
            try fs.makeDirectory(path("d"), mode: 0o755)
            try fs.writeFile(path("d/marker"), contents: Array("first".utf8), mode: 0o600)
            let first = try #require(try fs.metadata(of: path("d/marker")))
            #expect(first.mode == 0o600)
            try fs.writeFile(path("d/marker"), contents: Array("second".utf8), mode: 0o644)
            #expect(try fs.readFile(path("d/marker"), limit: 6) == Array("second".utf8))
            #expect(try fs.metadata(of: path("d/marker"))?.inode != first.inode)
            #expect(try fs.metadata(of: path("d/marker"))?.mode == 0o644)
            #expect(throws: Errno.fileTooLarge.at("read", "d/marker")) { try fs.readFile(path("d/marker"), limit: 5) }
            #expect(throws: CopyError.notAFile(try path("d"))) { try fs.readFile(path("d"), limit: 5) }
            #expect(try fs.readFile(path("d/marker"), limit: Int.max) == Array("second".utf8))
            #expect(throws: Errno.noSuchFile.at("rename", "missing/marker")) {
                try fs.writeFile(path("missing/marker"), contents: [1], mode: 0o644)
            }
            let leftovers = try fs.scan(.root) { _ in true }.entries.filter { TemporaryName.isTemporary($0.path.name) }
            #expect(leftovers.isEmpty)
        }
    }

    @Test func directoriesSymlinksRenamesAndRemovals() throws {
        try withRoot { scratch, fs in
            try fs.makeDirectory(path("open"), mode: 0o777)  // The umask does not apply.
            try fs.makeDirectory(path("private"), mode: 0o700)
            #expect(try fs.metadata(of: path("open"))?.mode == 0o777)
            #expect(try fs.metadata(of: path("private"))?.mode == 0o700)
            #expect(throws: Errno.fileExists.at("mkdir", "open")) { try fs.makeDirectory(path("open"), mode: 0o755) }

            try fs.makeSymlink(path("open/link"), target: [0x2E, 0x2E, 0xFF])
            #expect(try fs.metadata(of: path("open/link"))?.symlinkTarget == [0x2E, 0x2E, 0xFF])

            try fs.writeFile(path("a"), contents: Array("a".utf8), mode: 0o644)
            try fs.writeFile(path("b"), contents: Array("b".utf8), mode: 0o644)
            #expect(throws: Errno.fileExists.at("rename", "a -> b")) {
                try fs.rename(path("a"), to: path("b"), replacing: false)
            }
            try fs.rename(path("a"), to: path("private/a"), replacing: false)
            try fs.rename(path("private/a"), to: path("b"), replacing: true)
            #expect(try fs.readFile(path("b"), limit: 10) == Array("a".utf8))
            #expect(try fs.metadata(of: path("a")) == nil)

            #expect(throws: Errno.directoryNotEmpty.at("rmdir", "open")) { try fs.removeDirectory(path("open")) }
            try fs.removeFile(path("open/link"))
            try fs.removeDirectory(path("open"))
            try fs.removeFile(path("b"))
            #expect(throws: Errno.noSuchFile.at("unlink", "b")) { try fs.removeFile(path("b")) }
            #expect(try fs.scan(.root) { _ in true }.entries.map(\.path) == [try path("private")])
        }
    }

    @Test func setAttributesSetsModeAndNanosecondMtime() throws {
        try withRoot { scratch, fs in
            try fs.writeFile(path("file"), contents: [], mode: 0o644)
            try fs.setAttributes(path("file"), mode: 0o751, mtime: 1_234_567_890_123_456_789)
            let metadata = try #require(try fs.metadata(of: path("file")))
            #expect(metadata.mode == 0o751 && metadata.mtime == 1_234_567_890_123_456_789)
            try fs.setAttributes(path("file"), mode: nil, mtime: 5)
            #expect(try fs.metadata(of: path("file"))?.mode == 0o751)
            #expect(try fs.metadata(of: path("file"))?.mtime == 5)
        }
    }

    /// A file last changed before 1970 with a fraction of a second (an old archive's) keeps
    /// its mtime: the kernel wants the second below it and a fraction from 0 up, not a
    /// negative fraction (EINVAL).
    @Test(arguments: [-500_000_000, -1, -1_000_000_000, -86_400_123_456_789] as [Int64])
    func anMtimeBeforeNineteenSeventyIsKeptToTheNanosecond(mtime: Int64) throws {
        try withRoot { scratch, fs in
            try fs.writeFile(path("old"), contents: [], mode: 0o644)
            try fs.setAttributes(path("old"), mode: nil, mtime: mtime)
            #expect(try fs.metadata(of: path("old"))?.mtime == mtime)
        }
    }

    @Test func contentHashIsXXHash64OfTheContent() throws {
        try withRoot { scratch, fs in
            let content = randomBytes(3 << 20 + 11, seed: 5)
            try scratch.write("root/file", content)
            try scratch.write("root/empty", [])
            let expected = ContentHash(value: XXHash64.hash(content), size: Int64(content.count))
            #expect(try fs.contentHash(of: path("file")) == expected)
            #expect(try fs.contentHash(of: path("empty")) == ContentHash(value: 0xEF46_DB37_51D8_E999, size: 0))
            #expect(throws: CopyError.notAFile(.root)) { try fs.contentHash(of: .root) }
        }
    }

    @Test func extendedAttributesOfFilesDirectoriesAndSymlinks() throws {
        try withRoot { scratch, fs in
            try fs.writeFile(path("file"), contents: [], mode: 0o644)
            try fs.makeSymlink(path("link"), target: Array("file".utf8))
            let long = randomBytes(1000, seed: 6)  // More than the first read's buffer.

            #expect(try fs.extendedAttribute("user.nimbus.state", of: path("file")) == nil)
            try fs.setExtendedAttribute("user.nimbus.state", of: path("file"), to: Array("downloaded".utf8))
            try fs.setExtendedAttribute("user.nimbus.long", of: path("file"), to: long)
            try fs.setExtendedAttribute("user.nimbus.state", of: .root, to: Array("root".utf8))
            #expect(try fs.extendedAttribute("user.nimbus.state", of: path("file")) == Array("downloaded".utf8))
            #expect(try fs.extendedAttribute("user.nimbus.long", of: path("file")) == long)
            #expect(try fs.extendedAttribute("user.nimbus.state", of: .root) == Array("root".utf8))
            try fs.removeExtendedAttribute("user.nimbus.state", of: path("file"))
            try fs.removeExtendedAttribute("user.nimbus.state", of: path("file"))
            #expect(try fs.extendedAttribute("user.nimbus.state", of: path("file")) == nil)

            #expect(try fs.extendedAttribute("user.nimbus.state", of: path("link")) == nil)
            #expect(throws: Errno.notSupported.at("setxattr", "link")) {
                try fs.setExtendedAttribute("user.nimbus.state", of: path("link"), to: [1])
            }
            #expect(throws: Errno.notSupported.at("getxattr", "file trusted.x")) {
                try fs.extendedAttribute("trusted.x", of: path("file"))
            }
            #expect(throws: Errno.noSuchFile.at("getxattr", "missing")) {
                try fs.extendedAttribute("user.x", of: path("missing"))
            }
        }
    }

    @Test func removeTemporaryFilesRemovesOnlyTemporaryFiles() throws {
        try withRoot(temporaryDirectory: ".nimbus/tmp") { scratch, fs in
            try fs.makeDirectory(path("d"), mode: 0o755)
            try fs.makeDirectory(path(".nimbus"), mode: 0o755)
            try fs.makeDirectory(path(".nimbus/tmp"), mode: 0o755)
            let keep = [".nimbus-tmp", "nimbus-tmp-1", "d/.nimbus-tmpx", "d/file"]
            for name in keep { try fs.writeFile(path(name), contents: [], mode: 0o644) }
            try fs.makeDirectory(path(".nimbus-tmp-directory"), mode: 0o755)
            let stray = [".nimbus-tmp-1", "d/.nimbus-tmp-2", ".nimbus/tmp/.nimbus-tmp-3"]
            for name in stray { try scratch.write(SystemPath("root/\(name)"), [1]) }
            try fs.makeSymlink(path("d/.nimbus-tmp-link"), target: Array("file".utf8))

            #expect(try fs.removeTemporaryFiles() == 4)
            let left = Set(try fs.scan(.root) { _ in true }.entries.map(\.path))
            #expect(left == Set(try (keep + ["d", ".nimbus", ".nimbus/tmp", ".nimbus-tmp-directory"]).map(path)))
            #expect(try fs.removeTemporaryFiles() == 0)
        }
    }

    /// In a running daemon only the temporaries of its own copies go (wherever a folder rename
    /// carried them), not an application's coordinated write in progress.
    @Test func removeLeftoverCopiesRemovesOnlyCopyTemporaries() throws {
        try withRoot { scratch, fs in
            try fs.makeDirectory(path("renamed"), mode: 0o755)
            let copies = [".nimbus-tmp-0123456789abcdef", "renamed/.nimbus-tmp-fedcba9876543210"]
            let others = [".nimbus-tmp-write-1C2B-report.txt", "renamed/.nimbus-tmp-0123456789ABCDEF",
                          "renamed/.nimbus-tmp-0123456789abcdef0", "renamed/.nimbus-tmp-evict-x", "renamed/file"]
            for name in copies + others { try scratch.write(SystemPath("root/\(name)"), [1]) }
            #expect(TemporaryName.isCopyTemporary(TemporaryFile.randomName()))
            #expect(try fs.removeLeftoverCopies() == 2)
            let left = Set(try fs.scan(.root) { _ in true }.entries.map(\.path))
            #expect(left == Set(try (others + ["renamed"]).map(path)))
        }
    }

    @Test func checkRootFollowsARootReplacedByAnotherDirectory() throws {
        try withRoot { scratch, fs in
            try fs.writeFile(path("a"), contents: [1], mode: 0o644)
            let first = try fs.checkRoot()
            #expect(first.kind == .directory)

            try scratch.directory.rename("root", to: "old-root")
            try scratch.directory.makeDirectory("root")
            // Until the check, the open root is the old directory, wherever it went.
            #expect(try fs.metadata(of: path("a")) != nil)
            let second = try fs.checkRoot()
            #expect(second.inode != first.inode)
            #expect(try fs.metadata(of: path("a")) == nil)
            try fs.writeFile(path("b"), contents: [2], mode: 0o644)
            #expect(scratch.exists("root/b") && !scratch.exists("old-root/b"))
            #expect(try fs.checkRoot().inode == second.inode)

            try scratch.directory.removeFile("root/b")
            try scratch.directory.removeDirectory("root")
            #expect(throws: Errno.noSuchFile.at("stat", scratch.path.appending("root"))) { try fs.checkRoot() }
        }
    }

    @Test func aRootThatDoesNotExistFailsEveryOperationClearly() throws {
        try Scratch.with { scratch in
            let missing = scratch.path.appending("missing")
            let fs = DiskFileSystem(root: missing)
            #expect(throws: Errno.noSuchFile.at("open", missing)) { try fs.metadata(of: path("a")) }
            #expect(throws: Errno.noSuchFile.at("open", missing)) { try fs.scan(.root) { _ in true } }
        }
    }

    @Test func synchronizeAndSpaceInfo() throws {
        try withRoot { _, fs in
            try fs.synchronize()
            let space = try fs.spaceInfo()
            #expect(space.total > 0 && space.available >= 0 && space.available <= space.total)
        }
    }
}
