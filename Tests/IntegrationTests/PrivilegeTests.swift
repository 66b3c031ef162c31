import Foundation
import Glibc
import Testing

/// nimbusd holds CAP_SYS_ADMIN only for fanotify_init (DESIGN §5, issue 16): a running daemon
/// started as root shows no capability left on any of its threads, cannot gain any by exec,
/// and still syncs.
@Suite(.timeLimit(.minutes(2)))
struct PrivilegeTests {
    @Test(.enabled(if: geteuid() == 0, "skipped: needs root, so that nimbusd starts with capabilities to drop"))
    func aRunningDaemonHasNoCapabilityLeft() async throws {
        let sandbox = try SyncSandbox("privilege")
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: "alpha")
        try await daemon.start()
        let pid = try #require(daemon.pid)
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        #expect(tasks.count > 1, "the daemon's threads are all checked")
        for task in tasks {
            let status = try String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
            func field(_ name: String) -> String? {
                status.split(separator: "\n").first { $0.hasPrefix(name + ":") }.map {
                    $0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces)
                }
            }
            for name in ["CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb"] {
                #expect(field(name) == "0000000000000000", "thread \(task): \(name) \(field(name) ?? "missing")")
            }
            #expect(field("NoNewPrivs") == "1", "thread \(task)")
        }
        #expect(daemon.logLines(containing: "CAP_SYS_ADMIN served fanotify_init only").count == 1, "\(daemon.logTail(lines: 20))")

        // status says which placeholder style and why (this build: always suffix).
        let status = daemon.controlJSON(["status"]).object
        #expect(status?["placeholderStyle"] as? String == "suffix", "\(String(describing: status))")
        let reason = status?["placeholderStyleReason"] as? String ?? ""
        #expect(reason.contains("does not write them yet") || reason.contains("pre-content"), "\(reason)")

        // Still syncs as root without capabilities: its own files, its own folders.
        try SyncFiles.write(SyncFiles.join(daemon.local, "after-drop.txt"), Array("synced\n".utf8))
        try await sandbox.converge("a file written after the drop", daemon.local, daemon.cloud) {
            try SyncExpect.file(daemon.cloud, "after-drop.txt", "synced\n")
        }
    }
}
