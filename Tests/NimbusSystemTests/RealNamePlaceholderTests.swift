import Foundation
import Glibc
import NimbusVocabulary
import Synchronization
import Testing
@testable import NimbusSystem
import NimbusTestSupport

/// Real-name placeholders against the real kernel (DESIGN §5, issue 16): programs that open a
/// marked sparse file get the cloud's bytes, written in by a responder thread as the daemon's
/// hydration server will; a refusal reaches them as an errno; nobody gets zeros.
@Suite(.serialized, .enabled(if: FanotifySupport.available, Comment(rawValue: FanotifySupport.skipReason ?? "")))
struct RealNamePlaceholderTests {
    static let seed: UInt64 = 0x16_16
    static let programs: [(name: String, command: @Sendable (String, String) -> String)] = [
        ("cat", { "cat \(quoted($0)) > \(quoted($1))" }),
        ("head", { "head -c 100000000 \(quoted($0)) > \(quoted($1))" }),
        ("cp", { "cp \(quoted($0)) \(quoted($1))" }),
        ("dd", { "dd if=\(quoted($0)) of=\(quoted($1)) bs=64k status=none" }),
        ("python-shutil", { "/usr/bin/python3 -c 'import shutil,sys; shutil.copyfile(sys.argv[1], sys.argv[2])' \(quoted($0)) \(quoted($1))" }),
        ("python-mmap", { """
            /usr/bin/python3 -c 'import mmap,sys
            with open(sys.argv[1], "rb") as f, open(sys.argv[2], "wb") as o:
                o.write(mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)[:])' \(quoted($0)) \(quoted($1))
            """ }),
        ("tar", { "tar -C \(quoted(dirname($0))) -cf - \(quoted(basename($0))) | tar -xOf - > \(quoted($1))" }),
        ("rsync", { "rsync \(quoted($0)) \(quoted($1))" }),
    ]

    @Test(arguments: [4096, 3 << 20 | 17])
    func everyProgramReadsTheCloudBytes(size: Int) throws {
        try withHydration { fixture in
            let content = randomBytes(size, seed: Self.seed &+ UInt64(size))
            for program in Self.programs {
                if program.name == "rsync", (try? ShellCommand.run("command -v rsync").status) != 0 {
                    print("rsync is not installed: its case is skipped (apt-get install rsync)")
                    continue
                }
                let local = try fixture.placeholder(program.name, content: content)
                let output = fixture.scratch.path.description + "/out-" + program.name
                let run = try ShellCommand.run(program.command(local, output))
                #expect(run.status == 0, "\(program.name): \(run.error)")
                #expect(run.error.isEmpty, "\(program.name) complained: \(run.error)")  // tar: "file changed as we read it"
                let copied = try fixture.scratch.read(SystemPath("out-" + program.name))
                #expect(copied == content, "\(program.name) read \(copied.count) bytes, \(copied.filter { $0 != 0 }.count) non-zero")
            }
            let md5 = try ShellCommand.run("md5sum < \(quoted(try fixture.placeholder("md5sum", content: content)))")
            let expected = try ShellCommand.run("md5sum < \(quoted(fixture.scratch.path.description + "/cloud/md5sum"))")
            #expect(md5.status == 0 && md5.output == expected.output, "\(md5.error)")
            #expect(fixture.hydrator.fills.withLock { $0 } == Self.programs.count + 1 - (fixture.skippedRsync ? 1 : 0))
        }
    }

    @Test func aPlaceholderHasTheCloudFilesSizeMtimeAndModeAndNoBlocks() throws {
        try withHydration { fixture in
            let local = try fixture.placeholder("report.pdf", content: randomBytes(1 << 20, seed: Self.seed), mode: 0o640)
            let file = try FileDescriptor.open(beneath: fixture.scratch.directory, try path("local/report.pdf"), [.pathOnly])
            defer { try? file.close() }
            let cloud = try fixture.scratch.directory.metadata(of: "cloud/report.pdf")
            let metadata = try file.metadata()
            #expect(metadata.size == 1 << 20 && metadata.mtime == cloud.mtime && metadata.mode == 0o640)
            #expect(try file.allocatedBytes() == 0)
            #expect(try fixture.scratch.directory.extendedAttribute("user.nimbus.state", of: "local/report.pdf")
                    == Array("notDownloaded".utf8))
            #expect(try ShellCommand.run("du -k \(quoted(local))").output.hasPrefix("0\t"))
            // `stat` does not open the file: no fetch.
            #expect(try ShellCommand.run("stat -c %s \(quoted(local))").output == "\(1 << 20)\n")
            #expect(fixture.hydrator.fills.withLock { $0 } == 0)
            // Never replaces: the name is taken.
            #expect(throws: SystemError.self) { try fixture.placeholder("report.pdf", content: [1]) }
            #expect(try fixture.scratch.names(in: "local") == [Array("report.pdf".utf8)])
        }
    }

    @Test func aRefusalReachesTheReaderAsItsErrno() throws {
        try withHydration { fixture in
            let content = randomBytes(4096, seed: Self.seed)
            for (error, message) in [(Errno.ioError, "Input/output error"), (.noSpace, "No space left on device")] {
                fixture.hydrator.refusal.withLock { $0 = error }
                let local = try fixture.placeholder("refused-\(error.rawValue)", content: content)
                let run = try ShellCommand.run("cat \(quoted(local))")
                #expect(run.status != 0 && run.output.isEmpty && run.error.contains(message), "\(run)")
            }
            // An errno the kernel does not accept from a pre-content group is still an answer.
            fixture.hydrator.refusal.withLock { $0 = .permissionDenied }
            let run = try ShellCommand.run("cat \(quoted(try fixture.placeholder("refused-EACCES", content: content)))")
            #expect(run.status != 0 && run.error.contains("Operation not permitted"), "\(run)")
            #expect(fixture.hydrator.fills.withLock { $0 } == 0)
        }
    }

    /// The fact measured with the C prototype (issue 16): `cp` finds data with SEEK_DATA and
    /// copies a sparse file's holes as zeros without a single read, so a pre-access mark alone
    /// lets it copy zeros; the open-permission mark closes that.
    @Test func withoutTheOpenMarkCpCopiesZerosAndWithItTheRightBytes() throws {
        try withHydration { fixture in
            let content = randomBytes(64 << 10, seed: Self.seed)
            let preAccessOnly = try fixture.placeholder("pre-access-only", content: content, events: [.preAccess])
            #expect(try ShellCommand.run("cp \(quoted(preAccessOnly)) \(quoted(fixture.scratch.path.description + "/zeros"))").status == 0)
            #expect(try fixture.scratch.read("zeros") == [UInt8](repeating: 0, count: content.count))

            let marked = try fixture.placeholder("hydration", content: content)
            #expect(try ShellCommand.run("cp \(quoted(marked)) \(quoted(fixture.scratch.path.description + "/right"))").status == 0)
            #expect(try fixture.scratch.read("right") == content)
        }
    }

    /// `echo new > f`, `truncate -s 10 f` and appends give on a not-downloaded file exactly
    /// what they give on a downloaded one: the fill happens before, never under the new content.
    @Test func truncatesAndAppendsBehaveAsOnANormalFile() throws {
        try withHydration { fixture in
            let content = randomBytes(20_000, seed: Self.seed)
            let cases: [(String, (String) -> String, [UInt8])] = [
                ("replaced", { "echo new > \(quoted($0))" }, Array("new\n".utf8)),
                ("truncated", { "truncate -s 10 \(quoted($0))" }, Array(content.prefix(10))),
                ("extended", { "truncate -s 20010 \(quoted($0))" }, content + [UInt8](repeating: 0, count: 10)),
                ("appended", { "echo more >> \(quoted($0))" }, content + Array("more\n".utf8)),
                ("overwritten", { "printf XY | dd of=\(quoted($0)) bs=1 seek=5 conv=notrunc status=none" },
                 Array(content.prefix(5)) + Array("XY".utf8) + Array(content.dropFirst(7))),
            ]
            for (name, command, expected) in cases {
                let local = try fixture.placeholder(name, content: content)
                let run = try ShellCommand.run(command(local))
                #expect(run.status == 0, "\(name): \(run.error)")
                #expect(try fixture.scratch.read(SystemPath("local/" + name)) == expected, "\(name)")
            }
        }
    }

    @Test func concurrentReadersCauseOneFill() throws {
        try withHydration { fixture in
            let content = randomBytes(2 << 20, seed: Self.seed)
            let local = try fixture.placeholder("shared", content: content)
            // Twenty processes at once (not a shell's `wait`: the test runner's children start
            // with SIGCHLD blocked, which makes dash's `wait` hang).
            let statuses = Mutex<[Int32]>([])
            let all = DispatchGroup()
            for index in 0..<20 {
                all.enter()
                let output = fixture.scratch.path.description + "/reader-\(index)"
                Thread {
                    let status = (try? ShellCommand.run("cat \(quoted(local)) > \(quoted(output))").status) ?? -1
                    statuses.withLock { $0.append(status) }
                    all.leave()
                }.start()
            }
            all.wait()
            #expect(statuses.withLock { $0 } == [Int32](repeating: 0, count: 20))
            for index in 0..<20 { #expect(try fixture.scratch.read(SystemPath("reader-\(index)")) == content) }
            #expect(fixture.hydrator.fills.withLock { $0 } == 1)
        }
    }

    @Test func evictPunchesTheContentOutAndTheNextReadFetchesItAgain() throws {
        try withHydration { fixture in
            let content = randomBytes(1 << 20, seed: Self.seed)
            let local = try fixture.placeholder("evicted", content: content)
            #expect(try ShellCommand.run("cat \(quoted(local)) > /dev/null").status == 0)
            let relative = try path("local/evicted")
            let before = try fixture.scratch.directory.metadata(of: "local/evicted")

            // Opened before the mark (its own reads raise no events), marked, then punched.
            let file = try FileDescriptor.open(beneath: fixture.scratch.directory, relative, [.readWrite])
            try file.closeAfter {
                #expect(try file.allocatedBytes() >= Int64(content.count))
                try fixture.hydrator.group.mark(beneath: fixture.scratch.directory, relative)
                fixture.hydrator.expectNotDownloaded(inode: before.inode)
                try RealNamePlaceholderFile.punchOut(file, path: relative,
                                                     state: ("user.nimbus.state", Array("notDownloaded".utf8)))
                #expect(try file.allocatedBytes() == 0)
            }
            let after = try fixture.scratch.directory.metadata(of: "local/evicted")
            #expect(after.size == before.size && after.mtime == before.mtime && after.inode == before.inode)
            #expect(try ShellCommand.run("md5sum < \(quoted(local))").output == (try ShellCommand.run("md5sum < \(quoted(fixture.cloud("evicted")))")).output)
            #expect(fixture.hydrator.fills.withLock { $0 } == 2)
        }
    }

    @Test func aCloudFileThatChangedIsRefusedAndTheFileStaysAPlaceholder() throws {
        try withHydration { fixture in
            let content = randomBytes(8192, seed: Self.seed)
            let local = try fixture.placeholder("changed", content: content)
            try fixture.scratch.write("cloud/changed", Array("different".utf8))  // the cloud moved on
            let run = try ShellCommand.run("cat \(quoted(local))")
            #expect(run.status != 0 && run.error.contains("Input/output error"), "\(run)")
            let file = try FileDescriptor.open(beneath: fixture.scratch.directory, try path("local/changed"), [.pathOnly])
            defer { try? file.close() }
            #expect(try file.metadata().size == 8192 && file.allocatedBytes() == 0)
        }
    }

    /// Without a listener a not-downloaded file reads as zeros (the fact); guarded, it cannot
    /// be read at all by anyone but root; restored with the marks on, it reads right.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "skipped: needs setpriv (util-linux)"))
    func whileNoDaemonListensAGuardedFileCannotBeRead() throws {
        try withHydration { fixture in
            try fixture.scratch.directory.setPermissions(0o755)  // mkdtemp made it 0700
            let content = randomBytes(10_000, seed: Self.seed)
            try fixture.scratch.write("cloud/guarded", content, mode: 0o644)
            let cloud = try fixture.scratch.directory.metadata(of: "cloud/guarded")
            let relative = try path("local/guarded")
            let created = try RealNamePlaceholderFile.create(
                beneath: fixture.scratch.directory, relative, shape: .init(size: cloud.size, mtime: cloud.mtime, mode: 0o644),
                attributes: [], marking: nil, durable: false)
            fixture.hydrator.register(inode: created.inode, cloud: SystemPath(fixture.cloud("guarded")), expected: cloud,
                                      path: relative)
            let local = fixture.scratch.path.description + "/local/guarded"
            let countZeros = "import sys; d = open(sys.argv[1], 'rb').read(); print(len(d), d.count(0))"
            let asNobody = "setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c \(quoted(countZeros)) \(quoted(local))"
            #expect(try ShellCommand.run(asNobody).output == "10000 10000\n", "no listener, no guard: all zeros")

            #expect(try RealNamePlaceholderFile.guardReading(beneath: fixture.scratch.directory, relative) == 0o644)
            #expect(try fixture.scratch.directory.metadata(of: "local/guarded").mode == 0)
            let refused = try ShellCommand.run("setpriv --reuid=65534 --regid=65534 --clear-groups cat \(quoted(local))")
            #expect(refused.status != 0 && refused.error.contains("Permission denied"), "\(refused)")
            // What remains, as DESIGN §5 says: root reads through the guard.
            #expect(try ShellCommand.run("cat \(quoted(local)) | wc -c").output.trimmingCharacters(in: .whitespacesAndNewlines) == "10000")
            #expect(try fixture.scratch.directory.extendedAttribute(RealNamePlaceholderFile.modeAttribute, of: "local/guarded")
                    == Array("644".utf8))

            try fixture.scratch.write("local/sibling", [1, 2, 3])
            try RealNamePlaceholderFile.restoreReading(beneath: fixture.scratch.directory, in: try path("local"),
                                                       [(Array("guarded".utf8), 0o644)], group: fixture.hydrator.group)
            #expect(try fixture.scratch.directory.metadata(of: "local/guarded").mode == 0o644)
            #expect(try fixture.scratch.directory.extendedAttribute(RealNamePlaceholderFile.modeAttribute, of: "local/guarded") == nil)
            let read = try ShellCommand.run("setpriv --reuid=65534 --regid=65534 --clear-groups md5sum < \(quoted(local))")
            let expected = try ShellCommand.run("md5sum < \(quoted(fixture.cloud("guarded")))").output
            #expect(read.status == 0 && read.output == expected, "\(read)")
            // The directory's own mark is gone again: a sibling's open raises no event.
            let before = fixture.responder.seen.withLock { $0.count }
            #expect(try fixture.scratch.read("local/sibling") == [1, 2, 3])
            #expect(fixture.responder.seen.withLock { $0.count } == before)
        }
    }

    // MARK: - Fixture

    struct Fixture {
        let scratch: Scratch
        let hydrator: Hydrator
        let responder: Responder
        var skippedRsync: Bool { (try? ShellCommand.run("command -v rsync").status) != 0 }

        func cloud(_ name: String) -> String { scratch.path.description + "/cloud/" + name }

        /// Writes `cloud/NAME` with `content` and makes `local/NAME` its placeholder, marked
        /// for `events`; returns the local file's absolute path.
        @discardableResult
        func placeholder(_ name: String, content: [UInt8], mode: UInt32 = 0o644,
                         events: FanotifyEvents = .hydration) throws -> String {
            try scratch.write(SystemPath("cloud/" + name), content, mode: mode)
            let cloud = try scratch.directory.metadata(of: SystemPath("cloud/" + name))
            let relative = try path("local/" + name)
            let created = try RealNamePlaceholderFile.create(
                beneath: scratch.directory, relative, shape: .init(size: cloud.size, mtime: cloud.mtime, mode: mode),
                attributes: [("user.nimbus.state", Array("notDownloaded".utf8))],
                marking: events == .hydration ? hydrator.group : nil, durable: false)
            if events != .hydration { try hydrator.group.mark(beneath: scratch.directory, relative, for: events) }
            hydrator.register(inode: created.inode, cloud: SystemPath(self.cloud(name)), expected: cloud, path: relative)
            return scratch.path.description + "/local/" + name
        }
    }

    private func withHydration(_ body: (Fixture) throws -> Void) throws {
        try FanotifyScratch.with { scratch in
            try scratch.directory.makeDirectory("cloud")
            try scratch.directory.makeDirectory("local")
            let hydrator = Hydrator(group: try FanotifyGroup())
            let responder = Responder(group: hydrator.group) { hydrator.handle($0) }
            defer { responder.stop() }
            try body(Fixture(scratch: scratch, hydrator: hydrator, responder: responder))
        }
    }
}

private func dirname(_ path: String) -> String { String(path[..<path.lastIndex(of: "/")!]) }
private func basename(_ path: String) -> String { String(path[path.index(after: path.lastIndex(of: "/")!)...]) }
