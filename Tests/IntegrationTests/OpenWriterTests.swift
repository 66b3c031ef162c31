import Foundation
import Glibc
import NimbusTestSupport
import NimbusTestTraits
import Testing

/// DESIGN §3: a local file some program keeps open for writing is never replaced, deleted or
/// evicted. A download waits until the program closes it; if it wrote meanwhile, that is a
/// conflict and both versions are kept. Tried with real programs: Python, the sqlite3 shell
/// and a shell redirection (`exec 3>>file`).
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(3)))
struct OpenWriterTests {

    /// A program that opens a file for writing, says so by creating `ready`, waits for a line
    /// on its standard input, then writes its lines and closes the file.
    enum Writer: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case python, sqlite, shell
        var testDescription: String { rawValue }

        var fileName: String { self == .sqlite ? "data.db" : "log.txt" }

        /// The program and its arguments, for `file` and the `ready` marker.
        func command(file: String, ready: String) -> (String, [String]) {
            switch self {
            case .python:
                let script = """
                    import os, sys
                    f = open(sys.argv[1], 'a')
                    open(sys.argv[2], 'w').close()
                    sys.stdin.readline()
                    for i in range(20):
                        f.write('line %d\\n' % i); f.flush(); os.fsync(f.fileno())
                    f.close()
                    """
                return ("/usr/bin/env", ["python3", "-c", script, file, ready])
            case .shell:
                let script = #"exec 3>>"$1"; : > "$2"; read go; for i in $(seq 0 19); do echo "line $i" >&3; done; exec 3>&-"#
                return (SyncHarness.tool("bash"), ["-c", script, "writer", file, ready])
            case .sqlite:
                // The shell opens the database at the first statement and keeps it open (read-write).
                return (SyncHarness.tool("sqlite3"), [file])
            }
        }

        /// What the program reads at once (sqlite3 gets its statements on standard input).
        func start(ready: String) -> String {
            self == .sqlite ? "select count(*) from t;\n.shell touch '\(ready)'\n" : ""
        }

        /// What it reads when told to go on.
        var go: String {
            guard self == .sqlite else { return "go\n" }
            return "begin;\n" + (0..<20).map { "insert into t values('local\($0)');\n" }.joined() + "commit;\n.quit\n"
        }

        /// Starts the program on `file` and waits until it holds the file open; it writes when
        /// `go` comes on `input`. Stop `process` in a defer. Its stdin is a FIFO that `input`
        /// writes into: a `BackgroundProcess` reads stdin from a path and inherits no
        /// descriptor of the test process (a pipe's would reach other tests' children).
        func launch(file: String, in sandbox: SyncSandbox) async throws -> (process: BackgroundProcess, input: FileHandle) {
            let ready = sandbox.root + "/ready"
            let fifo = sandbox.root + "/writer-input"
            guard mkfifo(fifo, 0o600) == 0 else { throw HarnessFailure("mkfifo \(fifo): \(String(cString: strerror(errno)))") }
            // Read-write, the open does not wait for the child's (Linux); close-on-exec, no other
            // test's child inherits it. Closed, it is the program's end of input.
            let descriptor = open(fifo, O_RDWR | O_CLOEXEC)
            guard descriptor >= 0 else { throw HarnessFailure("open \(fifo): \(String(cString: strerror(errno)))") }
            let input = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            let (program, arguments) = command(file: file, ready: ready)
            let process = try BackgroundProcess(program, arguments, standardInput: fifo, outputPath: sandbox.root + "/writer.out")
            input.write(Data(start(ready: ready).utf8))
            do {
                try await sandbox.eventually("\(self) has \(file) open", timeout: .seconds(30)) {
                    SyncFiles.exists(Array(ready.utf8)) ? nil : "no \(ready) yet: \(process.exitDescription), \(process.output)"
                }
            } catch {
                process.stop()
                throw error
            }
            return (process, input)
        }
    }

    static func sqlite(_ database: String, _ statement: String, readOnly: Bool = false) -> (status: Int32, output: String) {
        SyncHarness.run(SyncHarness.tool("sqlite3"), readOnly ? ["-readonly", database, statement] : [database, statement])
    }

    /// The rows of `t` in a database file, comma-separated.
    static func rows(_ database: String) -> String {
        sqlite(database, "select group_concat(v, ',') from t", readOnly: true).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("a download waits while a program has the local file open for writing; its writes become a conflict copy",
          arguments: Writer.allCases)
    func downloadWaitsForAnOpenWriter(_ writer: Writer) async throws {
        if writer == .sqlite && !FileManager.default.isExecutableFile(atPath: SyncHarness.tool("sqlite3")) {
            Issue.record("sqlite3 is not installed (apt-get install sqlite3; .ci/run installs it)")
            return
        }
        let sandbox = try SyncSandbox("downloadWaitsForAnOpenWriter-\(writer)")
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: "alpha")
        let local = daemon.local, cloud = daemon.cloud
        let name = writer.fileName
        if writer == .sqlite {
            let made = Self.sqlite(local + "/" + name, "create table t(v text); insert into t values('base');")
            try #require(made.status == 0, "cannot make the database: \(made.output)")
        } else {
            try SyncFiles.write(SyncFiles.join(local, name), Array("base\n".utf8))
        }
        try await daemon.start()
        try await sandbox.converge("first sync", local, cloud, timeout: .seconds(30)) { SyncFiles.exists(SyncFiles.join(cloud, name)) ? nil : "\(name) not in the cloud" }

        let (process, input) = try await writer.launch(file: local + "/" + name, in: sandbox)
        defer { process.stop() }

        // The cloud copy changes while the program keeps the file open.
        let mark = daemon.logMark
        if writer == .sqlite {
            let edited = Self.sqlite(cloud + "/" + name, "insert into t values('cloud');")
            try #require(edited.status == 0, "cannot edit the cloud database: \(edited.output)")
        } else {
            try SyncFiles.append(SyncFiles.join(cloud, name), Array("edit\n".utf8))
        }
        // Either the daemon declines to replace the open file (as it must) or it already has
        // (as it did before): only then does the program write, so both cases are tested alike.
        try await sandbox.eventually("the download of \(name) is tried", timeout: .seconds(30)) {
            if !daemon.logLines(containing: "open for writing", since: mark).isEmpty { return nil }
            return try SyncFiles.read(SyncFiles.join(local, name)) == SyncFiles.read(SyncFiles.join(cloud, name)) ? nil : "not yet"
        }
        input.write(Data(writer.go.utf8))
        try input.close()
        #expect(try await process.exited(within: .seconds(30)), "\(writer) did not finish")

        let stem = String(name.split(separator: ".")[0]), ext = String(name.split(separator: ".")[1])
        let lines = (0..<20).map { "line \($0)\n" }.joined()
        try await sandbox.converge("both versions kept", local, cloud, timeout: .seconds(40)) {
            let copies = try SyncSafetyTests.conflictCopies(in: local, stem: stem, ext: ext, device: "alpha")
            guard copies.count == 1 else { return "expected one conflict copy of \(name) in \(local), found \(copies)" }
            for root in [local, cloud] where writer == .sqlite {
                let kept = Self.rows(root + "/" + name), copied = Self.rows(root + "/" + copies[0])
                let mine = "base," + (0..<20).map { "local\($0)" }.joined(separator: ",")
                guard kept == "base,cloud", copied == mine else {
                    return "\(root): \(name) holds [\(kept)], \(copies[0]) holds [\(copied)]"
                }
            }
            if writer == .sqlite { return nil }
            return try SyncExpect.all(SyncExpect.file(local, name, "base\nedit\n"), SyncExpect.file(cloud, name, "base\nedit\n"),
                             SyncExpect.file(local, copies[0], "base\n" + lines), SyncExpect.file(cloud, copies[0], "base\n" + lines))
        }
        try await daemon.stop(timeout: .seconds(20))
    }

    @Test("a file deleted in the cloud is not deleted here while a program writes to it; its writes are uploaded again")
    func deleteWaitsForAnOpenWriter() async throws {
        let sandbox = try SyncSandbox("deleteWaitsForAnOpenWriter")
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: "alpha")
        let local = daemon.local, cloud = daemon.cloud
        try SyncFiles.write(SyncFiles.join(local, "log.txt"), Array("base\n".utf8))
        try await daemon.start()
        try await sandbox.converge("first sync", local, cloud, timeout: .seconds(30)) { try SyncExpect.file(cloud, "log.txt", "base\n") }

        let (process, input) = try await Writer.shell.launch(file: local + "/log.txt", in: sandbox)
        defer { process.stop() }

        let mark = daemon.logMark
        try SyncFiles.remove(SyncFiles.join(cloud, "log.txt"))
        try await sandbox.eventually("the deletion of log.txt is tried", timeout: .seconds(30)) {
            if !daemon.logLines(containing: "open for writing", since: mark).isEmpty { return nil }
            return SyncFiles.exists(SyncFiles.join(local, "log.txt")) ? "not yet" : nil
        }
        input.write(Data(Writer.shell.go.utf8))
        try input.close()
        #expect(try await process.exited(within: .seconds(30)), "the shell did not finish")
        let lines = (0..<20).map { "line \($0)\n" }.joined()
        // A change beats a delete (DESIGN §4): the written file comes back to the cloud.
        try await sandbox.converge("the written file kept and uploaded", local, cloud, timeout: .seconds(40)) {
            try SyncExpect.all(SyncExpect.file(local, "log.txt", "base\n" + lines), SyncExpect.file(cloud, "log.txt", "base\n" + lines))
        }
        try await daemon.stop(timeout: .seconds(20))
    }

    @Test("resolve --keep local refuses to replace a file a program is writing to, and works once it is closed")
    func resolveRefusesAnOpenWriter() async throws {
        let sandbox = try SyncSandbox("resolveRefusesAnOpenWriter")
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: "alpha")
        let local = daemon.local, cloud = daemon.cloud
        try SyncFiles.write(SyncFiles.join(local, "doc.txt"), Array("original\n".utf8))
        try await daemon.start()
        try await sandbox.converge("first sync", local, cloud, timeout: .seconds(30)) { try SyncExpect.file(cloud, "doc.txt", "original\n") }
        try await daemon.stop(timeout: .seconds(20))
        try SyncFiles.write(SyncFiles.join(local, "doc.txt"), Array("edited here\n".utf8))
        try SyncFiles.write(SyncFiles.join(cloud, "doc.txt"), Array("edited in the cloud\n".utf8))
        try await daemon.start()
        try await sandbox.converge("the conflict", local, cloud, timeout: .seconds(30)) {
            let copies = try SyncSafetyTests.conflictCopies(in: local, stem: "doc", ext: "txt", device: "alpha")
            return copies.count == 1 ? nil : "no conflict copy yet"
        }

        let (process, input) = try await Writer.shell.launch(file: local + "/doc.txt", in: sandbox)
        defer { process.stop() }
        let refused = daemon.control(["resolve", "doc.txt", "--keep", "local"])
        #expect(refused.status != 0 && refused.output.contains("open for writing"), "\(refused)")
        #expect(try SyncExpect.file(local, "doc.txt", "edited in the cloud\n") == nil)

        try input.close()  // `read` ends: the shell closes the file and exits.
        #expect(try await process.exited(within: .seconds(30)), "the shell did not finish")
        let kept = daemon.control(["resolve", "doc.txt", "--keep", "local"])
        #expect(kept.status == 0, "\(kept)")
        try await daemon.stop(timeout: .seconds(20))
    }
}
