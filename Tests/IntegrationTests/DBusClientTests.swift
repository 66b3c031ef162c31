import Foundation
import Glibc
import NimbusSystem
import Testing

/// Our D-Bus client against a real, private `dbus-daemon --session`, with libdbus's own tools
/// (`dbus-monitor`, `dbus-send`) reading what we write and writing what we read.
@Suite struct DBusClientTests {
    /// Runs `body` with a private bus and a recorder on it; skips (printing why) without dbus-daemon.
    static func withRecorder(_ label: String, capabilities: [String] = ["actions", "body"],
                             _ body: (SessionBus, NotificationRecorder, SyncSandbox) async throws -> Void) async throws {
        let sandbox = try SyncSandbox(label)
        defer { sandbox.finish() }
        guard let bus = try await SessionBus.start(in: sandbox.root) else { return }
        defer { bus.stop() }
        let recorder = try NotificationRecorder(bus: bus, capabilities: capabilities)
        defer { recorder.stop() }
        try await body(bus, recorder, sandbox)
    }

    @Test func notifyReachesTheServerAndActionsComeBack() async throws {
        try await Self.withRecorder("dbus-notify") { bus, recorder, _ in
            let connection = try DBusConnection.connect(socketPath: bus.socketPath, uid: getuid())
            defer { connection.close() }
            #expect(connection.uniqueName.hasPrefix(":"), "Hello gave \(connection.uniqueName)")
            #expect(try NotificationsClient.capabilities(on: connection) == ["actions", "body"])
            try NotificationsClient.subscribe(on: connection)
            var notification = DesktopNotification(summary: "Deletions held", body: "12 files in /home/a b")
            notification.actions = [("confirm", "Confirm deletions"), ("revert", "Restore files")]
            notification.urgency = 2
            let id = try NotificationsClient.notify(notification, on: connection)
            #expect(id == 1)
            let calls = recorder.recorded
            try #require(calls.count == 1)
            #expect(calls[0].appName == "Nimbus" && calls[0].summary == "Deletions held" && calls[0].body == "12 files in /home/a b")
            #expect(calls[0].actions == ["confirm", "Confirm deletions", "revert", "Restore files"])
            #expect(calls[0].hints == .variantDictionary([("urgency", .byte(2)), ("desktop-entry", .string("nimbus-open")),
                                                          ("action-icons", .boolean(false))]))

            recorder.invoke("confirm", on: id)
            let deadline = ContinuousClock.now + .seconds(10)
            var signal: NotificationsClient.Signal?
            while signal == nil, ContinuousClock.now < deadline {
                if let message = try connection.nextMessage(within: .milliseconds(200)) { signal = NotificationsClient.signal(in: message) }
            }
            #expect(signal == .actionInvoked(id: id, key: "confirm"))
        }
    }

    /// libdbus decodes our Notify call (dbus-monitor prints it) and encodes a call we decode
    /// (dbus-send calling GetCapabilities; the recorder answers, dbus-send prints the reply).
    @Test func libdbusAgreesWithOurWireFormat() async throws {
        try await Self.withRecorder("dbus-libdbus") { bus, _, sandbox in
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-monitor"),
                  FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-send") else {
                print("skipped: dbus-monitor or dbus-send is missing (package dbus-bin)")
                return
            }
            let output = sandbox.root + "/monitor.txt"
            let monitor = try ChildProcess.spawn("/bin/sh", arguments: [
                "-c", "exec /usr/bin/dbus-monitor --address \"$1\" \"interface='org.freedesktop.Notifications'\" > \"$2\" 2>&1",
                "sh", bus.address, output])
            defer { kill(monitor, SIGTERM); _ = try? ChildProcess.wait(monitor) }
            // The monitor says it has attached (NameLost of its own name) before it sees anything.
            try await sandbox.eventually("dbus-monitor attached", timeout: .seconds(20)) {
                ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").contains("NameLost") ? nil : "no NameLost yet"
            }
            let connection = try DBusConnection.connect(socketPath: bus.socketPath, uid: getuid())
            defer { connection.close() }
            var notification = DesktopNotification(summary: "A \"conflict\"", body: "é/ü.txt")
            notification.actions = [("show", "Show conflict")]
            _ = try NotificationsClient.notify(notification, on: connection)
            try await sandbox.eventually("dbus-monitor printed the Notify call", timeout: .seconds(20)) {
                let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
                let squeezed = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
                let expected = "member=Notify string \"Nimbus\" uint32 0 string \"\" string \"A \"conflict\"\" string \"é/ü.txt\" "
                    + "array [ string \"show\" string \"Show conflict\" ] array [ dict entry( string \"urgency\" variant byte 1 ) "
                    + "dict entry( string \"desktop-entry\" variant string \"nimbus-open\" ) "
                    + "dict entry( string \"action-icons\" variant boolean false ) ] int32 -1"
                return squeezed.contains(expected) ? nil : "expected \(expected)\nin\n\(squeezed)"
            }
            let send = SyncHarness.run("/usr/bin/dbus-send", [
                "--bus=\(bus.address)", "--print-reply", "--dest=org.freedesktop.Notifications", "/org/freedesktop/Notifications",
                "org.freedesktop.Notifications.GetCapabilities"])
            let squeezed = send.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(send.status == 0 && squeezed.contains("array [ string \"actions\" string \"body\" ]"), "\(send.output)")
        }
    }

    /// A bus that accepts the connection and never answers costs one timeout, not a hang; a
    /// missing socket fails at once.
    @Test func aSilentBusTimesOut() async throws {
        let sandbox = try SyncSandbox("dbus-silent")
        defer { sandbox.finish() }
        let path = sandbox.root + "/silent"
        let listener = try UnixStreamSocket.listen(at: path)
        defer { listener.close() }
        #expect(throws: DBusError.timedOut("authentication")) {
            try DBusConnection.connect(socketPath: path, uid: getuid(), timeout: .milliseconds(300))
        }
        #expect(throws: DBusError.self) { try DBusConnection.connect(socketPath: sandbox.root + "/none", uid: getuid()) }
    }
}
