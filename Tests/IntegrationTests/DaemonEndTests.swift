import Foundation
import Glibc
import NimbusTestSupport
import NimbusTestTraits
import Testing

/// How the real `nimbusd` ends, and what does not end it: a SIGTERM in the middle of a big
/// copy stops it promptly and cleanly (issue 15 point 2), and a log whose reader went away
/// does not (SIGPIPE).
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(4)))
struct DaemonEndTests {
    /// `nimbusd … 2>&1 | true` outside systemd: every log line meets a pipe with no reader.
    /// The daemon keeps syncing, and a SIGTERM still ends it with status 0. Before SIGPIPE was
    /// ignored from the start, the first log line ended it with signal 13 (exit 141).
    @Test func aLogWhoseReaderWentAwayDoesNotEndTheDaemon() async throws {
        let sandbox = try SyncSandbox("closedLog")
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: "alpha")
        // A pipe whose reader is gone before nimbusd starts, without racing a `true` that
        // exits some time later: the FIFO is opened for reading and writing (so the open for
        // writing does not wait), then for writing, then the reading end is closed.
        let fifo = try Self.makeFIFO(sandbox.root + "/log-nobody-reads")
        daemon.launcher = ["/bin/sh", "-c", #"exec 3<>"$0" 4>"$0" 3<&- && exec "$@" >&4 2>&4 4>&-"#, fifo]
        try await daemon.start()
        try SyncFiles.write(SyncFiles.join(daemon.local, "written-after.txt"), Array("the log's reader left\n".utf8))
        try await sandbox.converge("a file written after the log's reader left reaches the cloud", daemon.local, daemon.cloud) {
            try SyncExpect.file(daemon.cloud, "written-after.txt", "the log's reader left\n")
        }
        #expect(daemon.isRunning, "\(daemon.exitDescription)")
        try await daemon.stop(timeout: .seconds(30))
    }

    /// SIGTERM in the middle of a 1 GiB upload (issue 15 point 2: the stop was looked at only
    /// between two actions): nimbusd gives the copy up at its next chunk, removes its
    /// temporary, records nothing for it and exits 0; the next start uploads the file. Before,
    /// it finished the copy and installed it first, so the cloud held the file after the stop.
    /// The copy is caught under way by freezing the daemon (SIGSTOP) as soon as its temporary
    /// appears, so the SIGTERM lands mid-copy however fast the disk is.
    @Test func aStopInTheMiddleOfABigCopyGivesItUpPromptly() async throws {
        // A real disk, not a tmpfs that /tmp may be: 1 GiB of data is written.
        let sandbox = try SyncSandbox("stopMidCopy", base: "/var/tmp")
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: "alpha")
        try await daemon.start()
        // Written outside the roots and renamed in, whole: the daemon sees it once, complete.
        let size = 1 << 30
        let outside = try sandbox.folder("outside") + "/big.bin"
        // Real data: a sparse file's holes would be copied in no time.
        try PlaceholderFiles.writeBig(outside, megabytes: size >> 20, seed: SeededRandom.seed(for: "aStopInTheMiddleOfABigCopyGivesItUpPromptly"))
        try SyncFiles.rename(Array(outside.utf8), SyncFiles.join(daemon.local, "big.bin"))

        var temporary: (path: String, size: Int64)?
        let caught = Polling.spin(timeout: .seconds(60)) {
            guard let path = (try? SyncFiles.temporaryFiles(in: daemon.cloud))?.first else { return false }
            daemon.freeze()
            temporary = (path, (try? SyncFiles.status(SyncFiles.join(daemon.cloud, path))).flatMap { $0 }.map { Int64($0.st_size) } ?? 0)
            return true
        }
        guard caught, let temporary else {
            daemon.send(SIGCONT)
            throw daemon.failure("no temporary file of the upload of big.bin appeared in the cloud folder within 60 s")
        }
        guard temporary.size < Int64(size) else {
            daemon.send(SIGCONT)
            Issue.record("the copy of 1 GiB was done before the daemon could be frozen (\(temporary.path): \(temporary.size) bytes); nothing tested")
            return
        }
        daemon.send(SIGTERM)
        daemon.send(SIGCONT)
        let stoppedAt = ContinuousClock.now
        guard try await daemon.waitForExit(timeout: .seconds(60)) else {
            throw daemon.failure("still running 60 s after SIGTERM in the middle of a copy")
        }
        #expect(daemon.exitedCleanly, "SIGTERM must end it with status 0: \(daemon.exitDescription)")
        #expect(try SyncFiles.temporaryFiles(in: daemon.cloud) == [], "the abandoned copy's temporary is removed")
        #expect(try SyncExpect.absent(daemon.cloud, "big.bin") == nil,
                "the copy under way at SIGTERM was given up, not finished (stopped \(stoppedAt.duration(to: .now)) after SIGTERM; \(temporary.path) had \(temporary.size) bytes)")

        try await daemon.start()
        try await sandbox.eventually("the next start uploads big.bin", timeout: .seconds(120)) {
            guard let copied = try SyncFiles.status(SyncFiles.join(daemon.cloud, "big.bin")), copied.st_size == size else {
                return "big.bin is not in the cloud folder with its \(size) bytes yet"
            }
            let compared = SyncHarness.run(SyncHarness.tool("cmp"), [daemon.local + "/big.bin", daemon.cloud + "/big.bin"])
            return compared.status == 0 ? nil : "the copies differ: \(compared.output)"
        }
        try await daemon.stop(timeout: .seconds(30))
    }

    /// stderr a pipe that is open but never read (a log reader that hangs): at debug level the
    /// log fills the pipe's 64 KiB within a few hundred files, and the daemon must still sync
    /// and answer status; once the pipe is read again, the log says how many lines it dropped.
    /// Before, the first write to the full pipe blocked the thread that logged (the engine's),
    /// and with it the sync and every answer (issue 15 point 2, lifecycle).
    @Test func aLogNobodyReadsNeverHoldsUpTheSync() async throws {
        let sandbox = try SyncSandbox("unreadLog")
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: "alpha")
        let fifo = try Self.makeFIFO(sandbox.root + "/log-never-read")
        // The test holds the reading end, and reads nothing until the pipe is full.
        let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard reader >= 0 else { throw HarnessFailure("cannot open the FIFO \(fifo): \(String(cString: strerror(errno)))") }
        defer { close(reader) }
        daemon.launcher = ["/bin/sh", "-c", #"exec "$@" 2>"$0""#, fifo]
        try await daemon.start()

        func unread() -> Int32 {
            var count: Int32 = 0
            return ioctl(reader, UInt(FIONREAD), &count) == 0 ? count : -1
        }
        var round = 0
        while unread() < 60 << 10 {
            round += 1
            guard round <= 20 else { throw daemon.failure("the log still holds only \(unread()) unread bytes after 20 rounds of 100 files") }
            for index in 0..<100 {
                try SyncFiles.write(SyncFiles.join(daemon.local, "round\(round)-\(index).txt"), Array("file \(index)\n".utf8))
            }
            try await sandbox.converge("round \(round) of 100 files reaches the cloud, \(unread()) bytes of log unread",
                                       daemon.local, daemon.cloud, timeout: .seconds(60))
        }
        // The pipe is full: the daemon still syncs, and answers.
        try SyncFiles.write(SyncFiles.join(daemon.local, "after-full.txt"), Array("still syncing\n".utf8))
        try await sandbox.converge("a file written once the log's pipe is full reaches the cloud", daemon.local, daemon.cloud,
                                   timeout: .seconds(60)) {
            try SyncExpect.file(daemon.cloud, "after-full.txt", "still syncing\n")
        }
        let status = daemon.controlJSON(["status"])
        #expect(status.object != nil, "status answers while the log's pipe is full: \(status.output)")

        // Read again: the next line that finds room says how many were dropped meanwhile.
        var log: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        func drain() { while case let count = read(reader, &buffer, buffer.count), count > 0 { log += buffer[..<count] } }
        drain()
        log.removeAll()
        try SyncFiles.write(SyncFiles.join(daemon.local, "after-read.txt"), Array("read again\n".utf8))
        try await sandbox.eventually("the log says how many lines were dropped", timeout: .seconds(60)) {
            drain()
            let text = String(decoding: log, as: UTF8.self)
            return text.contains("log lines were dropped") ? nil : "not said yet; the log read since: \(text.suffix(2000))"
        }
        try await daemon.stop(timeout: .seconds(30))
    }

    /// Makes the FIFO `path` (a log's pipe) and returns its path.
    static func makeFIFO(_ path: String) throws -> String {
        guard mkfifo(path, 0o600) == 0 else { throw HarnessFailure("cannot make the FIFO \(path): \(String(cString: strerror(errno)))") }
        return path
    }
}
