import Foundation
import Glibc
import NimbusSystem
import NimbusTestTraits
import Testing


/// nimbusd on a private session bus with a recorder standing in for the desktop's
/// notification server (SessionBusHarness): what the user is told, how often, and what a
/// click does.
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(3)))
struct DesktopNotificationTests {
    /// 150 synced files, 120 of them deleted locally: the guard holds the deletions, the
    /// desktop is told exactly once (not once per pass), and "Confirm deletions" applies them.
    /// A daemon on `bus` with 150 synced files in docs/, 120 of them deleted locally and held by
    /// the guard; returns it and the one notification it sent.
    static func holdDeletions(_ sandbox: SyncSandbox, _ bus: SessionBus, _ recorder: NotificationRecorder) async throws
        -> (SyncDaemon, NotificationRecorder.Call) {
        let daemon = try sandbox.daemon(device: "alpha")
        daemon.environmentOverrides["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        let names = (0..<150).map { "f\($0).txt" }
        try SyncFiles.makeDirectory(SyncFiles.join(daemon.local, "docs"))
        for name in names { try SyncFiles.write(SyncFiles.join(daemon.local, "docs/" + name), Array("file \(name)\n".utf8)) }
        try await daemon.start()
        try await sandbox.converge("first sync of 150 files", daemon.local, daemon.cloud, timeout: .seconds(60)) {
            let count = try SyncTree(scanning: daemon.cloud).fileCount
            return count == 150 ? nil : "\(count) of 150 files in the cloud folder"
        }
        #expect(recorder.recorded.isEmpty, "notified before anything needed the user: \(recorder.recorded.map(\.summary))")
        let mark = daemon.logMark
        for name in names.prefix(120) { try SyncFiles.remove(SyncFiles.join(daemon.local, "docs/" + name)) }
        _ = try await daemon.waitForLog("holding", since: mark, timeout: .seconds(60))
        let calls = try await recorder.waitForCalls(1)
        try #require(calls.count == 1, "\(calls.map(\.summary))\n\(sandbox.logs(lines: 30))")
        return (daemon, calls[0])
    }

    @Test func heldDeletionsAreNotifiedOnceAndConfirmedFromTheNotification() async throws {
        try await DBusClientTests.withRecorder("notify-held") { bus, recorder, sandbox in
            let (daemon, held) = try await Self.holdDeletions(sandbox, bus, recorder)
            let mark = daemon.logMark
            #expect(held.appName == "Nimbus" && held.summary == "Nimbus is holding 120 deletions", "\(held.summary)")
            #expect(held.body.contains("docs/f0.txt") && held.body.contains(daemon.cloud), "\(held.body)")
            #expect(held.actions == ["confirm-deletes", "Confirm deletions", "revert-deletes", "Restore files"])

            // More passes (a new file, a full rescan) tell nothing new.
            try SyncFiles.write(SyncFiles.join(daemon.local, "after.txt"), Array("later\n".utf8))
            try await sandbox.eventually("a new file still syncs while deletions are held", timeout: .seconds(30)) {
                try SyncExpect.file(daemon.cloud, "after.txt", "later\n")
            }
            #expect(daemon.control(["rescan"]).status == 0)
            #expect(recorder.recorded.count == 1, "told again: \(recorder.recorded.map(\.summary))")
            #expect(try SyncTree(scanning: daemon.cloud).fileCount == 151)

            recorder.invoke("confirm-deletes", on: held.id)
            try await sandbox.converge("deletions confirmed from the notification", daemon.local, daemon.cloud, timeout: .seconds(30)) {
                let count = try SyncTree(scanning: daemon.cloud).fileCount
                return count == 31 ? nil : "\(count) files in the cloud folder, expected 31"
            }
            _ = try await daemon.waitForLog("confirmed from the desktop notification", since: mark)
            // What came of the button takes the place of the notification.
            let after = try await recorder.waitForCalls(2)
            #expect(after.count == 2 && after[1].summary == "Deletions confirmed" && after[1].replacesID == held.id,
                    "\(after.map { "\($0.summary) replacing \($0.replacesID)" })")
            try await daemon.stop()
        }
    }

    /// Deletions decided with nimbusctl, then the notification's "Restore files" pressed: nothing
    /// is restored (a stale button never acts on what is held later), and the user is told.
    @Test func aStaleButtonDoesNothingAndSaysSo() async throws {
        try await DBusClientTests.withRecorder("notify-stale") { bus, recorder, sandbox in
            let (daemon, held) = try await Self.holdDeletions(sandbox, bus, recorder)
            let confirm = daemon.control(["confirm-deletes"])
            #expect(confirm.status == 0, "\(confirm.output)")
            try await sandbox.converge("deletions confirmed with nimbusctl", daemon.local, daemon.cloud, timeout: .seconds(30)) {
                let count = try SyncTree(scanning: daemon.cloud).fileCount
                return count == 30 ? nil : "\(count) files in the cloud folder, expected 30"
            }
            recorder.invoke("revert-deletes", on: held.id)
            let calls = try await recorder.waitForCalls(2)
            #expect(calls.count == 2 && calls[1].summary == "Nothing was done" && calls[1].body.contains("already decided"),
                    "\(calls.map(\.summary))")
            #expect(try SyncTree(scanning: daemon.local).fileCount == 30 && SyncTree(scanning: daemon.cloud).fileCount == 30)
            try await daemon.stop()
        }
    }

    /// A conflict made while the daemon was stopped is told once, naming the file; "Show
    /// conflict" opens its folder with xdg-open (a stand-in on PATH records what it was given).
    @Test func aConflictIsNotifiedAndShowConflictOpensItsFolder() async throws {
        try await DBusClientTests.withRecorder("notify-conflict") { bus, recorder, sandbox in
            let bin = try sandbox.folder("bin")
            let opened = sandbox.root + "/opened.txt"
            try SyncFiles.write(SyncFiles.join(bin, "xdg-open"), Array("#!/bin/sh\nprintf '%s\\n' \"$@\" > '\(opened).tmp' && mv '\(opened).tmp' '\(opened)'\n".utf8),
                        mode: 0o755)
            let daemon = try sandbox.daemon(device: "alpha")
            daemon.environmentOverrides["DBUS_SESSION_BUS_ADDRESS"] = bus.address
            daemon.environmentOverrides["PATH"] = bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            try SyncFiles.makeDirectory(SyncFiles.join(daemon.local, "team notes"))
            try SyncFiles.write(SyncFiles.join(daemon.local, "team notes/plan.txt"), Array("original\n".utf8))
            try await daemon.start()
            try await sandbox.converge("first sync", daemon.local, daemon.cloud) { try SyncExpect.file(daemon.cloud, "team notes/plan.txt", "original\n") }
            try await daemon.stop()
            try SyncFiles.write(SyncFiles.join(daemon.local, "team notes/plan.txt"), Array("edited here\n".utf8))
            try SyncFiles.write(SyncFiles.join(daemon.cloud, "team notes/plan.txt"), Array("edited in the cloud\n".utf8))
            try await daemon.start()

            let calls = try await recorder.waitForCalls(1)
            try #require(calls.count == 1, "\(calls.map(\.summary))\n\(sandbox.logs(lines: 30))")
            #expect(calls[0].summary == "Conflict: plan.txt")
            #expect(calls[0].body.contains(daemon.local + "/team notes/plan.txt was changed here and on another device"), "\(calls[0].body)")
            #expect(calls[0].actions == ["show-conflict", "Show conflict", "default", "Show conflict"])
            recorder.invoke("show-conflict", on: calls[0].id)
            try await sandbox.eventually("xdg-open was run on the conflict's folder", timeout: .seconds(30)) {
                let text = (try? String(contentsOfFile: opened, encoding: .utf8)) ?? ""
                return text == daemon.local + "/team notes\n" ? nil : "xdg-open got \(text.debugDescription)"
            }
            #expect(recorder.recorded.count == 1)
            try await daemon.stop()
        }
    }

    /// A server without actions and with body markup: the cloud folder taken away stops the
    /// pair, which is told once, with no buttons, the folder's "<&>" escaped.
    @Test func aHaltedPairIsToldOnceWithoutActionsWhereTheServerHasNone() async throws {
        try await DBusClientTests.withRecorder("notify-halted", capabilities: ["body", "body-markup"]) { bus, recorder, sandbox in
            let daemon = try sandbox.daemon(device: "alpha", cloud: "cloud <&>")
            daemon.environmentOverrides["DBUS_SESSION_BUS_ADDRESS"] = bus.address
            try SyncFiles.write(SyncFiles.join(daemon.local, "a.txt"), Array("a\n".utf8))
            try await daemon.start()
            try await sandbox.converge("first sync", daemon.local, daemon.cloud) { try SyncExpect.file(daemon.cloud, "a.txt", "a\n") }
            try SyncFiles.rename(Array(daemon.cloud.utf8), Array((daemon.cloud + " away").utf8))
            let calls = try await recorder.waitForCalls(1)
            try #require(calls.count == 1, "\(sandbox.logs(lines: 30))")
            #expect(calls[0].summary == "Nimbus stopped syncing" && calls[0].actions.isEmpty)
            #expect(calls[0].body.contains("cloud &lt;&amp;&gt;") && !calls[0].body.contains("<&>"), "\(calls[0].body)")
            let mark = daemon.logMark
            try SyncFiles.rename(Array((daemon.cloud + " away").utf8), Array(daemon.cloud.utf8))
            _ = try await daemon.waitForLog("sync resumes", since: mark, timeout: .seconds(30))
            #expect(recorder.recorded.count == 1, "\(recorder.recorded.map(\.summary))")
            try await daemon.stop()
        }
    }

    /// Placeholders opened faster than open-rate-limit: the storm is told once, naming a path
    /// and the command that downloads it.
    @Test func aStormOfOpensIsToldOnce() async throws {
        let s = try PlaceholderSandbox("notify-storm")
        defer { s.finish() }
        guard let bus = try await SessionBus.start(in: s.root) else { return }
        defer { bus.stop() }
        let recorder = try NotificationRecorder(bus: bus)
        defer { recorder.stop() }
        let d = s.daemon
        d.sessionBusAddress = bus.address
        d.config = ["placeholders": ["open-rate-limit": "2"]]
        for i in 0..<20 { try PlaceholderFiles.write(d.cloud + "/many/f\(i).txt", Array("file \(i)\n".utf8)) }
        try await d.start()
        /// The suffix-style placeholder of file i (a real-name storm is the hydration server's: its
        /// hook, HydrationServer.onStorm, is tested in HydrationServerTests).
        func placeholder(_ i: Int) -> String? {
            let file = d.local + "/many/f\(i).txt"
            return PlaceholderFiles.exists(file + ".nimbus") ? file + ".nimbus" : nil
        }
        try await d.eventually("20 placeholders", timeout: .seconds(30)) {
            (0..<20).allSatisfy { placeholder($0) != nil } ? nil : "not all there yet"
        }
        for _ in 0..<3 { for i in 0..<20 { if let path = placeholder(i) { PlaceholderFiles.touchByOpening(path) } } }
        let calls = try await recorder.waitForCalls(1)
        try #require(calls.count == 1, "\(d.logTail())")
        #expect(calls[0].summary == "Nimbus refuses downloads on open for now")
        #expect(calls[0].body.contains("open-rate-limit = 2 a minute") && calls[0].body.contains("download many/f"), "\(calls[0].body)")
        try await d.settle("storm")
        #expect(recorder.recorded.count == 1, "\(recorder.recorded.map(\.summary))")
        try await d.stop()
    }

    /// A session bus that accepts connections and never answers: the daemon logs it once,
    /// still holds deletions and still syncs, and stops cleanly.
    @Test func aBusThatNeverAnswersCostsTheSyncNothing() async throws {
        let sandbox = try SyncSandbox("notify-silent-bus")
        defer { sandbox.finish() }
        let silent = try UnixStreamSocket.listen(at: sandbox.root + "/silent-bus")
        defer { silent.close() }
        let daemon = try sandbox.daemon(device: "alpha")
        daemon.environmentOverrides["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=" + sandbox.root + "/silent-bus"
        for i in 0..<150 { try SyncFiles.write(SyncFiles.join(daemon.local, "f\(i)"), Array("\(i)\n".utf8)) }
        try await daemon.start()
        try await sandbox.converge("first sync", daemon.local, daemon.cloud, timeout: .seconds(60)) {
            try SyncExpect.file(daemon.cloud, "f149", "149\n")
        }
        let mark = daemon.logMark
        for i in 0..<120 { try SyncFiles.remove(SyncFiles.join(daemon.local, "f\(i)")) }
        _ = try await daemon.waitForLog("holding", since: mark, timeout: .seconds(60))
        _ = try await daemon.waitForLog("desktop notifications: cannot use the session bus", since: mark, timeout: .seconds(30))
        try SyncFiles.write(SyncFiles.join(daemon.local, "after"), Array("x\n".utf8))
        try await sandbox.eventually("a new file still syncs", timeout: .seconds(30)) { try SyncExpect.file(daemon.cloud, "after", "x\n") }
        #expect(daemon.logLines(containing: "cannot use the session bus").count == 1)
        try await daemon.stop()
    }
}
