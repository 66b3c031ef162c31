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
        let fifo = sandbox.root + "/log-nobody-reads"
        guard mkfifo(fifo, 0o600) == 0 else { throw HarnessFailure("cannot make the FIFO \(fifo): \(String(cString: strerror(errno)))") }
        daemon.launcher = ["/bin/sh", "-c", #"exec 3<>"$0" 4>"$0" 3<&- && exec "$@" >&4 2>&4 4>&-"#, fifo]
        try await daemon.start()
        try SyncFiles.write(SyncFiles.join(daemon.local, "written-after.txt"), Array("the log's reader left\n".utf8))
        try await sandbox.converge("a file written after the log's reader left reaches the cloud", daemon.local, daemon.cloud) {
            try SyncExpect.file(daemon.cloud, "written-after.txt", "the log's reader left\n")
        }
        #expect(daemon.isRunning, "\(daemon.exitDescription)")
        try await daemon.stop(timeout: .seconds(30))
    }
}
