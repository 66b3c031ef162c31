import Foundation
import Glibc
import NimbusClient
import NimbusSystem
import Testing
import NimbusTestSupport

/// End to end (issue 14): a real nimbusd on a folder with files in every state, Nautilus under
/// Xvfb with the extension of this tree; the extension reads the states from the daemon and
/// Nautilus shows each file's emblem, with both placeholder styles. The screenshot is kept in the
/// sandbox; the real-name one is copied to `NIMBUS_NAUTILUS_SCREENSHOT` when set (e.g.
/// Packaging/screenshots/nautilus-states.png).
@Suite(.serialized, .timeLimit(.minutes(4)))
struct NautilusScreenshotTests {

    /// What each name should show, by the emblem names of Packaging/nautilus/nimbus_shell/model.py.
    static let expected = [
        "Report.odt": "emblem-default", "Contract.pdf": "emblem-nimbus-pinned", "Notes.txt": "emblem-nimbus-conflict",
        "Holiday.jpg": "emblem-nimbus-cloud", "Video.mp4": "emblem-important", "Draft.odt": "emblem-synchronizing",
        "Photos": "emblem-nimbus-cloud", "Projects": "emblem-default",
    ]

    @Test("Nautilus shows an emblem per state, read from a real daemon (Xvfb, a private session bus)",
          .enabled(if: DesktopSession.missing == nil, Comment(rawValue: "skipped: \(DesktopSession.missing ?? "")")),
          arguments: ["suffix", "real-name"])
    func everyStateHasItsEmblem(style requested: String) async throws {
        if requested == "real-name", let reason = RealNameSupport.skipReason {
            print("[nautilus-states] real-name placeholders SKIPPED: \(reason)")
            return
        }
        let s = requested == "real-name" ? try RealName.sandbox("nautilus-states-real-name") : try PlaceholderSandbox("nautilus-states")
        let desktop = try DesktopSession(root: try s.sandbox.folder("desktop"))
        var holder: pid_t = 0
        defer {
            if holder > 0 { kill(-holder, SIGKILL); _ = try? ChildProcess.wait(holder) }
            desktop.stop()
            s.finish()
        }
        let d = s.daemon
        d.mode = "mirror"
        for name in ["Report.odt", "Contract.pdf", "Notes.txt", "Projects/plan.txt"] {
            try PlaceholderFiles.write(d.local + "/" + name, Array("the first version of \(name)\n".utf8))
        }
        for name in ["Holiday.jpg", "Video.mp4", "Photos/Beach.jpg", "Photos/Dunes.jpg"] {
            try PlaceholderFiles.write(d.cloud + "/" + name, Array("cloud content of \(name)\n".utf8))
        }
        try await d.start()
        let style = try await d.ctlJSON(["status"])["placeholderStyle"] as? String ?? "suffix"
        #expect(style == requested, "asked for \(requested) placeholders, the daemon uses \(style)")
        let onDisk = { (name: String) in d.local + "/" + name + (style == "suffix" ? ".nimbus" : "") }
        try await waitForStates(d, ["Report.odt": "downloaded", "Notes.txt": "downloaded", "Contract.pdf": "downloaded",
                                    "Holiday.jpg": "downloaded", "Video.mp4": "downloaded", "Photos/Beach.jpg": "downloaded",
                                    "Photos/Dunes.jpg": "downloaded"])
        for name in ["Holiday.jpg", "Video.mp4", "Photos"] { try await d.ctlJSON(["evict", name]) }
        try await d.ctlJSON(["pin", "Contract.pdf"])
        // A conflict: both sides change while paused.
        try await d.ctlJSON(["pause"])
        try PlaceholderFiles.write(d.local + "/Notes.txt", Array("this device's edit\n".utf8))
        try PlaceholderFiles.write(d.cloud + "/Notes.txt", Array("the cloud's edit\n".utf8))
        try await d.ctlJSON(["resume"])
        // An error: opening a placeholder is an automatic download, which keeps min-free-space
        // free; no disk has 1000 TiB, so it is refused and the file is in state error.
        d.config["cache", default: [:]]["min-free-space"] = "1000T"
        try d.writeConfig()
        let connection = try await NimbusConnection.connect(to: .socket(d.socketPath))
        _ = try await connection.callRaw("reload", [String: String]())
        connection.close()
        // Syncing: a new file written under a lease waits to upload until the lease ends.
        let draft = NetworkCloudServers.quoted(d.local + "/Draft.odt")
        let lock = [SyncHarness.nimbusctl, "--socket", d.socketPath, "lock", "Draft.odt", "--", "sh", "-c",
                    "echo draft > \(draft) && exec sleep 600"].map(NetworkCloudServers.quoted).joined(separator: " ")
        holder = try ChildProcess.spawn(SyncHarness.tool("sh"), arguments: ["-c", "exec setsid \(lock) >/dev/null 2>&1"],
                                        environment: d.environment)
        let others = ["Notes.txt": "conflict", "Draft.odt": "local", "Contract.pdf": "downloaded",
                      "Report.odt": "downloaded", "Holiday.jpg": "notDownloaded", "Photos/Beach.jpg": "notDownloaded"]
        if style == "real-name" {
            // The fill of a real-name placeholder on open does not keep min-free-space (seen
            // here); a cloud copy gone while sync is paused makes the fill fail instead.
            try await waitForStates(d, others)
            try await d.ctlJSON(["pause"])
            try FileManager.default.removeItem(atPath: d.cloud + "/Video.mp4")
        }
        _ = PlaceholderFiles.touchByOpening(onDisk("Video.mp4"))  // real names: the open itself fails
        try await waitForStates(d, others.merging(["Video.mp4": "error"]) { $1 })

        try desktop.expose(socket: d.socketPath, as: "e2e")
        try await desktop.startDisplay()
        try desktop.startNautilus(d.local)
        let wanted = Dictionary(uniqueKeysWithValues: Self.expected.map { name, emblem in
            (["Holiday.jpg", "Video.mp4"].contains(name) ? onDisk(name) : d.local + "/" + name, emblem)
        })
        try await Polling.eventually("the extension to set every emblem", timeout: .seconds(60), interval: .milliseconds(100)) {
            let shown = desktop.emblems()
            let wrong = wanted.filter { shown[$0.key] != $0.value }.map { "\($0.key): \(shown[$0.key] ?? "none") instead of \($0.value)" }
            return wrong.isEmpty ? nil : wrong.sorted().joined(separator: "\n")
                + "\n--- nautilus log:\n\(desktop.log("nautilus").suffix(3000))"
        }
        let picture = s.root + "/nautilus-states.png"
        try await desktop.screenshot(to: picture)
        let size = (try? FileManager.default.attributesOfItem(atPath: picture)[.size] as? Int) ?? 0
        #expect(size > 10_000, "the screenshot \(picture) is only \(size) bytes")
        if let copy = ProcessInfo.processInfo.environment["NIMBUS_NAUTILUS_SCREENSHOT"], style == "real-name" {
            _ = try? FileManager.default.removeItem(atPath: copy)
            try FileManager.default.copyItem(atPath: picture, toPath: copy)
            print("[nautilus-states] screenshot copied to \(copy)")
        }
        #expect(!desktop.log("nautilus").contains("Traceback"), "the extension raised:\n\(desktop.log("nautilus"))")
    }

    /// Waits until `nimbusctl ls -r` shows each path in its state.
    func waitForStates(_ d: PlaceholderDaemon, _ states: [String: String]) async throws {
        try await d.eventually("the states \(states)", timeout: .seconds(60)) {
            let entries = try await d.entries()
            let wrong = states.filter { entries[$0.key]?["state"] as? String != $0.value }
            return wrong.isEmpty ? nil : wrong.keys.sorted().map { "\($0): \(entries[$0]?["state"] ?? "missing")" }.joined(separator: ", ")
        }
    }
}
