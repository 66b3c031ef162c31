import Foundation
import Glibc
import NimbusTestTraits
import Testing

/// nimbusd holds CAP_SYS_ADMIN only for fanotify_init (DESIGN §5, issue 16): a running daemon
/// started as root shows no capability left on any of its threads, cannot gain any by exec,
/// and still syncs.
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(2)))
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

        // status says which placeholder style and why: real names where the sandbox's
        // filesystem takes pre-content marks (ext4), else suffix (a tmpfs /tmp), with the reason.
        let status = daemon.controlJSON(["status"]).object
        let style = status?["placeholderStyle"] as? String
        #expect(style == "real-name" || style == "suffix", "\(String(describing: status))")
        let reason = status?["placeholderStyleReason"] as? String ?? ""
        #expect(reason.contains("pre-content"), "\(reason)")

        // Still syncs as root without capabilities: its own files, its own folders.
        try SyncFiles.write(SyncFiles.join(daemon.local, "after-drop.txt"), Array("synced\n".utf8))
        try await sandbox.converge("a file written after the drop", daemon.local, daemon.cloud) {
            try SyncExpect.file(daemon.cloud, "after-drop.txt", "synced\n")
        }
    }

    /// What nimbusd-user@UID.service does for a desktop user: nimbusd runs as that user with
    /// CAP_SYS_ADMIN as its only bounding and ambient capability. It creates its group, keeps
    /// no capability, and no other process of the same user can take the group from it (it is
    /// not dumpable: /proc/PID/environ, which needs the same ptrace access as pidfd_getfd,
    /// cannot be read).
    @Test(.enabled(if: RealNameSupport.skipReason == nil, Comment(rawValue: RealNameSupport.skipReason ?? "")))
    func aDesktopUsersDaemonKeepsItsGroupToItself() async throws {
        let sandbox = try SyncSandbox("privilege-desktop", base: RealNameSupport.base)
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: "desktop")
        let home = sandbox.root + "/home"
        try RealNameSupport.handOver(sandbox, [daemon.local, daemon.cloud, daemon.stateDirectory, home])
        daemon.launcher = RealNameSupport.desktopUnitLauncher(home: home)
        try await daemon.start()
        let pid = try #require(daemon.pid)
        // The launcher exec'd nimbusd: the child is nimbusd itself, running as nobody.
        let threads = try RealNameSupport.threadStatus(pid)
        #expect(threads.count > 1, "the daemon's threads are all checked")
        for (task, fields) in threads {
            #expect(fields["Uid"]?.split(separator: "\t").first == "\(RealNameSupport.nobody.uid)", "thread \(task): Uid \(fields["Uid"] ?? "?")")
            for name in ["CapEff", "CapPrm", "CapInh", "CapAmb"] {
                #expect(fields[name] == "0000000000000000", "thread \(task): \(name) \(fields[name] ?? "missing")")
            }
        }
        #expect(daemon.logLines(containing: "CAP_SYS_ADMIN served fanotify_init only").count == 1, "\(daemon.logTail(lines: 20))")

        let environ = SyncHarness.run(RealNameSupport.asNobody[0], Array(RealNameSupport.asNobody.dropFirst())
                                      + [SyncHarness.tool("cat"), "/proc/\(pid)/environ"])
        #expect(environ.status != 0, """
            a process of the daemon's own user could read /proc/\(pid)/environ, so it could also ptrace the daemon \
            or copy its fanotify group with pidfd_getfd
            """)

        // With the unit's privilege, on /var/tmp: real-name placeholders.
        let status = daemon.controlJSON(["status"])
        let reason = status.object?["placeholderStyleReason"] as? String ?? ""
        #expect(status.object?["placeholderStyle"] as? String == "real-name", "\(status.output)")
        #expect(!reason.contains("CAP_SYS_ADMIN") && !reason.contains("capabilit"), "\(reason)")

        // It still syncs, as that user.
        try SyncFiles.write(SyncFiles.join(daemon.local, "from-desktop.txt"), Array("synced\n".utf8))
        try await sandbox.converge("a file written while the daemon runs as nobody", daemon.local, daemon.cloud) {
            try SyncExpect.file(daemon.cloud, "from-desktop.txt", "synced\n")
        }
        try await daemon.stop()
    }
}
