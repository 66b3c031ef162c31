import Foundation
import Glibc
import NimbusSystem
import NimbusTestTraits
import Testing
import NimbusTestSupport

/// kill -9 with systemd keeping the fanotify group (DESIGN §5): the test plays systemd's
/// file-descriptor store. nimbusd hands its group over with `FDSTORE=1`; after the kill the
/// test still holds it, so the reader that was waiting for a fill keeps waiting (the kernel
/// lets waiting readers through only when the group closes) until the next nimbusd, given
/// the group as `LISTEN_FDS`, answers it with EIO: never the part filled so far, then zeros.
/// Then a new reader gets the right bytes from the new daemon.
@Suite(.serialized, .onAThreadOfItsOwn(timeLimit: .minutes(5)),
       .enabled(if: RealNameSupport.skipReason == nil, Comment(rawValue: RealNameSupport.skipReason ?? "")))
struct RealNameKeptGroupTests {

    /// One nimbusd started by hand: stdout and stderr to the daemon's log, `LISTEN_PID` its own.
    struct Launch {
        let pid: Int32
        init(_ d: PlaceholderDaemon, notify: String, passing group: FileDescriptor?) throws {
            var environment = d.environment
            environment["NOTIFY_SOCKET"] = notify
            if group != nil {
                environment["LISTEN_FDS"] = "1"
                environment["LISTEN_FDNAMES"] = "fanotify"
            }
            let script = #"[ -n "$LISTEN_FDS" ] && export LISTEN_PID=$$; exec "$0" "$@" >> "$NIMBUS_TEST_LOG" 2>&1"#
            environment["NIMBUS_TEST_LOG"] = d.logPath
            pid = try ChildProcess.spawn("/bin/sh", arguments: ["-c", script, SyncHarness.nimbusd] + d.arguments,
                                         environment: environment, passing: group)
        }
    }

    /// Reads notifications until READY=1; keeps the descriptor of a `FDSTORE=1` message.
    static func awaitReady(_ socket: UnixDatagramSocket, storing stored: inout FileDescriptor?, pid: Int32) throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            guard let (bytes, descriptor) = try socket.receiveWithDescriptor(timeout: .milliseconds(200)) else {
                if kill(pid, 0) != 0 { throw HarnessFailure("nimbusd exited before READY=1") }
                continue
            }
            let text = String(decoding: bytes, as: UTF8.self)
            if let descriptor {
                if text.contains("FDSTORE=1") && text.contains("FDNAME=fanotify") {
                    if let old = stored { try? old.close() }
                    stored = descriptor
                } else {
                    try? descriptor.close()
                }
            }
            if text.split(separator: "\n").contains("READY=1") { return }
        }
        throw HarnessFailure("no READY=1 within 60 s")
    }

    @Test("kill -9 during a 200 MB fill with the group kept (systemd's FDSTORE): the waiting reader gets EIO, never partial bytes; the next reader the right ones")
    func keptGroupRefusesTheCutFill() async throws {
        let s = try RealName.sandbox("realNameKept")
        defer { s.finish() }
        let d = s.daemon
        try d.writeConfig()
        let original = s.root + "/original.bin"
        try PlaceholderFiles.writeBig(original, megabytes: 200, seed: 7)
        try #require(SyncHarness.run(SyncHarness.tool("cp"), ["-p", original, d.cloud + "/big.bin"]).status == 0)
        let notifyPath = s.root + "/store.sock"
        let notify = try UnixDatagramSocket.bound(to: notifyPath)
        defer { notify.close() }
        var stored: FileDescriptor?
        defer { try? stored?.close() }

        let first = try Launch(d, notify: notifyPath, passing: nil)
        defer { kill(first.pid, SIGKILL); _ = try? ChildProcess.wait(first.pid) }
        try Self.awaitReady(notify, storing: &stored, pid: first.pid)
        let group = try #require(stored, "nimbusd did not hand its fanotify group to the store (FDSTORE=1, FDNAME=fanotify)")
        try await d.eventually("the real-name placeholder") { RealName.isNotDownloaded(d, "big.bin") }

        let file = d.local + "/big.bin", during = s.root + "/during.bin"
        let reader = try BackgroundProcess("/bin/sh", ["-c", #"cat "$1" > "$2""#, "sh", file, during], scratch: s.root)
        defer { reader.stop() }
        let began = Polling.spin(timeout: .seconds(60)) { (PlaceholderFiles.status(file)?.st_blocks ?? 0) > 0 || !reader.isRunning }
        kill(first.pid, SIGSTOP)  // On a fast disk the fill would end between the poll and the kill.
        try #require(began, "the fill did not begin within 60 s")
        kill(first.pid, SIGKILL)
        _ = try ChildProcess.wait(first.pid)
        let cut = reader.isRunning
        print("[realNameKept] kill -9 at \(Int64(PlaceholderFiles.status(file)?.st_blocks ?? 0) * 512) bytes filled; reader still waiting: \(cut)")
        try #require(cut, "the fill ended before the daemon was stopped: the kill cut nothing, so nothing was tested")

        let second = try Launch(d, notify: notifyPath, passing: group)
        defer { kill(second.pid, SIGTERM); _ = try? ChildProcess.wait(second.pid) }
        try Self.awaitReady(notify, storing: &stored, pid: second.pid)
        try await reader.waitForExit(timeout: .seconds(60))
        let got = PlaceholderFiles.status(during)?.st_size ?? -1
        #expect(reader.status != 0 && got == 0, "the reader cut off by kill -9 exited \(reader.status) with \(got) bytes, expected EIO and none")
        #expect(d.logTail(lines: 200).contains("took over the fanotify group"), "\(d.logTail(lines: 40))")
        let after = RealName.shell(#"timeout 60 cat "$1" > "$2""#, [file, s.root + "/after.bin"])
        #expect(after.status == 0 && PlaceholderFiles.same(s.root + "/after.bin", original), "a reader after the restart: \(after)")
        #expect(PlaceholderFiles.same(d.cloud + "/big.bin", original), "the cloud copy changed")
    }
}
