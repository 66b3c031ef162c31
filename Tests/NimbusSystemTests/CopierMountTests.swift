import Glibc
import NimbusTestSupport
import NimbusVocabulary
import Testing
@testable import NimbusSystem

/// Tests that mount a tmpfs (as root): one at a time, always unmounted.
@Suite(.serialized) struct CopierMountTests {
    @Test func aFullDiskFailsWithENOSPCAndLeavesNoTemporaryFile() throws {
        try Scratch.with { scratch in
            try scratch.directory.makeDirectory("src")
            try scratch.directory.makeDirectory("small")
            let content = randomBytes(4 << 20, seed: 3)
            try scratch.write("src/big", content)
            try withTmpfs(at: scratch.path.appending("small"), size: "1m") {
                let source = DiskFileSystem(root: scratch.path.appending("src"))
                let destination = DiskFileSystem(root: scratch.path.appending("small"),
                                                  temporaryDirectory: try path(".nimbus/tmp"))
                let expected = try #require(try source.metadata(of: path("big")))
                let error = try #require(throws: SystemError.self) {
                    try destination.prepareCopy(of: path("big"), from: source, expected: expected,
                                                durable: true) { _ in }
                }
                #expect(error.errno == .noSpace)
                #expect(error.path.hasPrefix(".nimbus/tmp/.nimbus-tmp-"), "\(error)")
                #expect(try scratch.names(in: "small/.nimbus/tmp").isEmpty)

                let write = try #require(throws: SystemError.self) {
                    try destination.writeFile(path("marker"), contents: content, mode: 0o644)
                }
                #expect(write.errno == .noSpace)
                #expect(try scratch.names(in: "small/.nimbus/tmp").isEmpty)
                #expect(try scratch.names(in: "small") == [Array(".nimbus".utf8)])
            }
        }
    }

    /// ext4 → tmpfs → ext4: FICLONE is refused both ways, copy_file_range is refused or works
    /// depending on the kernel; the content arrives either way.
    @Test func copiesAcrossFilesystems() throws {
        try Scratch.with { scratch in
            try scratch.directory.makeDirectory("disk")
            try scratch.directory.makeDirectory("memory")
            let content = randomBytes(4 << 20 + 3, seed: 4)
            try scratch.write("disk/file", content)
            try withTmpfs(at: scratch.path.appending("memory"), size: "16m") {
                let disk = DiskFileSystem(root: scratch.path.appending("disk"))
                let memory = DiskFileSystem(root: scratch.path.appending("memory"))
                let there = try #require(try disk.metadata(of: path("file")))
                let copy = try memory.prepareCopy(of: path("file"), from: disk, expected: there, durable: true) { _ in }
                _ = try memory.install(copy, at: path("file"), replacing: nil, displacedTo: nil, durable: true)
                #expect(try scratch.read("memory/file") == content)

                let back = try #require(try memory.metadata(of: path("file")))
                // Written by this process's copier: a child another test forks may hold it.
                try Polling.untilClosedElsewhere(path("file"), in: memory)
                let copyBack = try disk.prepareCopy(of: path("file"), from: memory, expected: back,
                                                    durable: true) { _ in }
                _ = try disk.install(copyBack, at: path("file"), replacing: there, displacedTo: nil, durable: true)
                #expect(try scratch.read("disk/file") == content)
            }
        }
    }

    /// Runs `body` with a tmpfs mounted at `path`, unmounted afterwards (lazily if busy).
    /// A mount that fails is recorded as an issue: the test did not run.
    private func withTmpfs(at path: SystemPath, size: String, _ body: () throws -> Void) throws {
        guard mount("tmpfs", path.description, "tmpfs", 0, "size=\(size)") == 0 else {
            Issue.record("could not mount a tmpfs at \(path) (\(Errno.current)); this test needs root and did not run")
            return
        }
        defer {
            if umount2(path.description, 0) != 0 { _ = umount2(path.description, Int32(MNT_DETACH)) }
        }
        try body()
    }
}
