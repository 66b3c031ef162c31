import Foundation
import Glibc
import NimbusSystem
import Synchronization
import Testing
import NimbusTestSupport

/// A private session bus: `dbus-daemon --session` listening in a temporary directory, started
/// through `ChildProcess.spawn` (no inherited descriptors), stopped with SIGTERM.
final class SessionBus {
    let directory: String
    let socketPath: String
    private let pid: Int32

    var address: String { "unix:path=" + socketPath }

    /// Nil (with the reason printed) when dbus-daemon is not installed: the tests that need a bus skip.
    static func start(in directory: String) async throws -> SessionBus? {
        guard let daemon = ["/usr/bin/dbus-daemon", "/bin/dbus-daemon"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            print("skipped: dbus-daemon is not installed (apt-get install dbus); the D-Bus notification tests need a private session bus")
            return nil
        }
        let socketPath = directory + "/bus"
        let pid = try ChildProcess.spawn(daemon, arguments: ["--session", "--nofork", "--nopidfile", "--address=unix:path=\(socketPath)"])
        let bus = SessionBus(directory: directory, socketPath: socketPath, pid: pid)
        let deadline = ContinuousClock.now + .seconds(20)
        while (try? DBusConnection.connect(socketPath: socketPath, uid: getuid(), timeout: .seconds(2))) == nil {
            guard ContinuousClock.now < deadline else { throw HarnessFailure("dbus-daemon did not listen on \(socketPath) within 20 s") }
            try await Task.sleep(for: .milliseconds(20))
        }
        return bus
    }

    private init(directory: String, socketPath: String, pid: Int32) {
        self.directory = directory
        self.socketPath = socketPath
        self.pid = pid
    }

    func stop() {
        kill(pid, SIGTERM)
        _ = try? ChildProcess.wait(pid)
    }
}

/// Stands in for the desktop's notification server: owns `org.freedesktop.Notifications` on
/// a private bus, records every Notify call, answers with increasing ids, and emits
/// ActionInvoked when a test clicks an action. Runs on a thread of its own over our client.
/// Who owns what: its thread alone uses `connection` after `init` (`stop` closes it once that
/// thread has finished); what tests read and ask (`calls`, `outgoing`) is behind `Mutex`es.
/// `@unchecked Sendable` for the connection.
final class NotificationRecorder: @unchecked Sendable {
    struct Call: Sendable {
        var id: UInt32
        var appName: String
        var replacesID: UInt32
        var summary: String
        var body: String
        /// Action keys and labels, alternating, as on the wire.
        var actions: [String]
        var hints: DBusValue
    }

    private let connection: DBusConnection
    private let calls = Mutex<[Call]>([])
    private let outgoing = Mutex<[DBusMessage]>([])
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    let capabilities: [String]

    init(bus: SessionBus, capabilities: [String] = ["actions", "body"]) throws {
        self.capabilities = capabilities
        connection = try DBusConnection.connect(socketPath: bus.socketPath, uid: getuid())
        // DBUS_NAME_FLAG_DO_NOT_QUEUE (4): 1 means we are the primary owner.
        let reply = try connection.call(.methodCall(destination: DBusConnection.busName, path: DBusConnection.busPath,
                                                    interface: DBusConnection.busName, member: "RequestName",
                                                    body: [.string(NotificationsClient.service), .uint32(4)]))
        guard reply.body.first?.uint32Value == 1 else { throw HarnessFailure("RequestName answered \(reply.body)") }
        let thread = Thread { [self] in serve() }
        thread.name = "notification-recorder"
        thread.start()
    }

    var recorded: [Call] { calls.withLock { $0 } }

    /// The user clicks `key` on notification `id`.
    func invoke(_ key: String, on id: UInt32) {
        let signal = DBusMessage.signal(path: NotificationsClient.path, interface: NotificationsClient.service,
                                        member: "ActionInvoked", body: [.uint32(id), .string(key)])
        outgoing.withLock { $0.append(signal) }
    }

    func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        finished.wait()
        connection.close()
    }

    /// Waits until `count` calls were recorded (or the timeout passed) and returns them all.
    func waitForCalls(_ count: Int, timeout: Duration = .seconds(30)) async throws -> [Call] {
        let deadline = ContinuousClock.now + timeout
        while recorded.count < count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        return recorded
    }

    private func serve() {
        defer { finished.signal() }
        while !stopping.load(ordering: .sequentiallyConsistent) {
            do {
                for signal in outgoing.withLock({ list in defer { list = [] }; return list }) { try connection.send(signal) }
                // A short wait, so that a queued signal goes out soon after `invoke`.
                guard let message = try connection.nextMessage(within: .milliseconds(50)), message.kind == .methodCall else { continue }
                try connection.send(answer(message))
            } catch {
                print("notification recorder: \(error)")
                return
            }
        }
    }

    private func answer(_ call: DBusMessage) -> DBusMessage {
        switch (call.member, call.signature) {
        case ("GetCapabilities", ""):
            return .methodReturn(to: call, body: [.strings(capabilities)])
        case ("Notify", "susssasa{sv}i"):
            let b = call.body
            let recorded = calls.withLock { list -> Call in
                let entry = Call(id: UInt32(list.count + 1), appName: b[0].stringValue ?? "", replacesID: b[1].uint32Value ?? 0,
                                 summary: b[3].stringValue ?? "",
                                 body: b[4].stringValue ?? "", actions: b[5].stringArray ?? [], hints: b[6])
                list.append(entry)
                return entry
            }
            return .methodReturn(to: call, body: [.uint32(recorded.id)])
        default:
            var error = DBusMessage(kind: .error, destination: call.sender, body: [.string("no \(call.member ?? "") \(call.signature) here")])
            error.errorName = "org.freedesktop.DBus.Error.UnknownMethod"
            error.replySerial = call.serial
            return error
        }
    }
}
