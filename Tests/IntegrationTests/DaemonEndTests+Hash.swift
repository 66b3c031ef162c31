import Foundation
import Glibc
import NimbusTestSupport
import Testing

extension DaemonEndTests {
    /// SIGTERM while the first pass compares the contents of two 1 GiB files (the same size on
    /// both sides and no journal yet: both are hashed): nimbusd gives the hash up at its next
    /// chunk, plans nothing from it, never says READY=1 (it was stopped while starting: only
    /// STOPPING=1) and exits 0; the next start compares them and calls them in sync. Before, the
    /// hash went on to the end of both files (issue 15 point 2), and READY=1 followed STOPPING=1.
    /// The daemon is frozen (SIGSTOP) as soon as it has a big.bin open, so the SIGTERM lands
    /// in the hash however fast the machine; what it reads after that is counted
    /// (`/proc/PID/io`), not timed.
    @Test func aStopInTheMiddleOfAHashGivesItUpAndIsNeverReady() async throws {
        let sandbox = try SyncSandbox("stopMidHash")
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: "alpha")
        let size: Int64 = 1 << 30
        for folder in [daemon.local, daemon.cloud] {
            // Sparse: holes read as zeros, and nothing is written to the disk.
            let fd = open(folder + "/big.bin", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0, ftruncate(fd, off_t(size)) == 0 else { throw HarnessFailure("cannot make \(folder)/big.bin") }
            close(fd)
        }
        try daemon.launch()
        guard let pid = daemon.pid else { throw daemon.failure("no process") }
        var readAtStop: Int64 = 0
        let caught = Polling.spin(timeout: .seconds(60)) {
            guard Self.openFiles(of: pid).contains(where: { $0.hasSuffix("/big.bin") }) else { return false }
            daemon.freeze()
            readAtStop = Self.bytesRead(by: pid) ?? 0
            return true
        }
        guard caught else { throw daemon.failure("nimbusd did not open big.bin to compare it within 60 s") }
        guard readAtStop < size else {
            daemon.send(SIGCONT)
            Issue.record("the first file was hashed whole before the daemon could be frozen (\(readAtStop) bytes read); nothing tested")
            return
        }
        daemon.send(SIGTERM)
        daemon.send(SIGCONT)
        var readAfterStop: Int64 = 0
        let exited = Polling.spin(timeout: .seconds(60)) {
            if let read = Self.bytesRead(by: pid) { readAfterStop = max(readAfterStop, read - readAtStop) }
            return !daemon.isRunning
        }
        guard exited else { throw daemon.failure("still running 60 s after SIGTERM in the middle of a hash") }
        #expect(daemon.exitedCleanly, "SIGTERM must end it with status 0: \(daemon.exitDescription)")
        #expect(readAfterStop < 64 << 20, "the hash under way was given up at its next chunk, not read on: \(readAfterStop) bytes read after SIGTERM")
        #expect(!daemon.receivedReady(), "no READY=1 from a daemon stopped while starting: \(daemon.notifications)")
        #expect(daemon.notifications.contains { $0.contains("STOPPING=1") }, "STOPPING=1 was sent: \(daemon.notifications)")

        try await daemon.start(timeout: .seconds(300))
        let info = daemon.controlJSON(["info", "big.bin"])
        #expect(info.object?["state"] as? String == "downloaded", "the next start compared them and found them in sync: \(info.output)")
        try await daemon.stop(timeout: .seconds(30))
    }

    /// What `/proc/PID/fd` links to: the files the process has open.
    static func openFiles(of pid: Int32) -> [String] {
        let directory = "/proc/\(pid)/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + $0) }
    }

    /// The bytes the process has read so far (`rchar` of `/proc/PID/io`); nil once it is gone.
    static func bytesRead(by pid: Int32) -> Int64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix("rchar:") }.flatMap { Int64($0.dropFirst(6).trimmingCharacters(in: .whitespaces)) }
    }
}
