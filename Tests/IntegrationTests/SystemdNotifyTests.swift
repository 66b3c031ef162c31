import Foundation
import Testing
import NimbusSystem
import NimbusTestSupport

/// Plays systemd: a notification socket, a watchdog, SIGHUP and SIGTERM, against the real
/// `nimbusd` binary on temporary folders.
@Suite(.serialized) struct SystemdNotifyTests {
    /// Collects notification datagrams until `predicate` holds or `seconds` pass.
    static func collect(_ socket: UnixDatagramSocket, seconds: Double, until predicate: ([String]) -> Bool) throws -> [String] {
        var messages: [String] = []
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline && !predicate(messages) {
            if let bytes = try socket.receive(timeout: .milliseconds(100)) { messages.append(String(decoding: bytes, as: UTF8.self)) }
        }
        return messages
    }

    @Test func readyWatchdogReloadAndStop() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-systemd-\(UUID().uuidString)")
        let local = root.appendingPathComponent("local"), cloud = root.appendingPathComponent("cloud")
        for dir in [local, cloud] { try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true) }
        defer { try? FileManager.default.removeItem(at: root) }
        try Data("hello".utf8).write(to: local.appendingPathComponent("a.txt"))
        let config = root.appendingPathComponent("nimbus.conf")
        try Data("[device]\nname = before\n".utf8).write(to: config)
        let notifyPath = root.appendingPathComponent("notify").path
        let socket = try UnixDatagramSocket.bound(to: notifyPath)
        defer { socket.close() }

        let arguments = ["--local", local.path, "--cloud", cloud.path, "--state-dir", root.appendingPathComponent("state").path,
                         "--socket", root.appendingPathComponent("ctl.sock").path, "--config", config.path]
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notifyPath
        environment["WATCHDOG_USEC"] = "200000"
        environment.removeValue(forKey: "JOURNAL_STREAM")
        // Through ChildProcess (no descriptor of the test process), its output in a file.
        let process = try BackgroundProcess(NimbusdProcess.nimbusd, arguments, environment: environment, scratch: root.path)
        defer { process.stop() }
        func log() -> String { process.output }

        // READY=1 comes once the first sync is done: the file is in the cloud by then.
        let startup = try Self.collect(socket, seconds: 10) { $0.contains { $0.contains("READY=1") } }
        #expect(startup.contains { $0.contains("READY=1") }, "no READY=1; log:\n\(log())")
        #expect(FileManager.default.fileExists(atPath: cloud.appendingPathComponent("a.txt").path))
        #expect(startup.first { $0.contains("READY=1") }?.contains("STATUS=") == true)

        // The watchdog is fed at half of WATCHDOG_USEC (every 100 ms), from the engine thread.
        let pings = try Self.collect(socket, seconds: 5) { $0.filter { $0 == "WATCHDOG=1" }.count >= 5 }
        #expect(pings.filter { $0 == "WATCHDOG=1" }.count >= 5, "watchdog pings: \(pings)")

        // SIGHUP: RELOADING=1 with the monotonic time, then READY=1 with the new configuration.
        try Data("[device]\nname = after\n".utf8).write(to: config)
        process.send(SIGHUP)
        let reload = try Self.collect(socket, seconds: 10) { messages in
            guard let reloading = messages.firstIndex(where: { $0.contains("RELOADING=1") }) else { return false }
            return messages[reloading...].contains { $0.contains("READY=1") }
        }
        let reloading = try #require(reload.firstIndex { $0.contains("RELOADING=1") }, "no RELOADING=1: \(reload)")
        #expect(reload[reloading].contains("MONOTONIC_USEC="))
        #expect(reload[reloading...].contains { $0.contains("READY=1") })
        #expect(log().contains("configuration reloaded"))

        // SIGTERM: STOPPING=1, exit status 0, no temporary files left.
        process.send(SIGTERM)
        let stopping = try Self.collect(socket, seconds: 10) { $0.contains { $0.contains("STOPPING=1") } }
        #expect(process.exitedBlocking(within: .seconds(30)), "nimbusd still runs 30 s after SIGTERM; log:\n\(log())")
        #expect(stopping.contains { $0.contains("STOPPING=1") })
        #expect(process.status == 0, "\(process.exitDescription); log:\n\(log())")
        let leftovers = (FileManager.default.enumerator(atPath: root.path)?.allObjects as? [String] ?? [])
            .filter { $0.contains(".nimbus-tmp-") }
        #expect(leftovers.isEmpty, "temporary files left: \(leftovers)")
    }

    /// `systemctl stop` at any moment of a start stops nimbusd cleanly (status 0). Two moments,
    /// alternately: as soon as the control socket exists (just before the signals were handled:
    /// the old code was killed by the SIGTERM every time, mid-start), and right after READY=1
    /// (Dispatch's signal sources dropped about one SIGTERM in ten there when the CPUs were
    /// busy, and systemd waited for its stop timeout).
    @Test func aSigtermAtAnyMomentOfTheStartStopsCleanly() throws {
        for round in 0..<30 {
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-sigterm-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: root) }
            for side in ["local", "cloud"] {
                try FileManager.default.createDirectory(at: root.appendingPathComponent(side), withIntermediateDirectories: true)
            }
            try Data("hello".utf8).write(to: root.appendingPathComponent("local/a.txt"))
            let notifyPath = root.appendingPathComponent("notify").path
            let socket = try UnixDatagramSocket.bound(to: notifyPath)
            defer { socket.close() }
            var environment = ProcessInfo.processInfo.environment
            environment["NOTIFY_SOCKET"] = notifyPath
            environment.removeValue(forKey: "JOURNAL_STREAM")
            let controlSocket = root.appendingPathComponent("ctl.sock").path
            let arguments = ["--local", root.appendingPathComponent("local").path, "--cloud", root.appendingPathComponent("cloud").path,
                             "--state-dir", root.appendingPathComponent("state").path, "--socket", controlSocket,
                             "--device-name", "sigterm"]
            let process = try BackgroundProcess(NimbusdProcess.nimbusd, arguments, environment: environment, scratch: root.path)
            defer { process.stop() }
            let moment: String
            if round.isMultiple(of: 2) {
                moment = "as soon as the control socket existed"
                let appeared = Polling.spin(timeout: .seconds(30)) { FileManager.default.fileExists(atPath: controlSocket) }
                try #require(appeared, "round \(round): no control socket; log:\n\(process.output)")
            } else {
                moment = "right after READY=1"
                let startup = try Self.collect(socket, seconds: 30) { $0.contains { $0.contains("READY=1") } }
                try #require(startup.contains { $0.contains("READY=1") }, "round \(round): no READY=1; log:\n\(process.output)")
            }
            process.send(SIGTERM)
            try #require(process.exitedBlocking(within: .seconds(20)),
                         "round \(round): nimbusd still runs 20 s after a SIGTERM sent \(moment); log:\n\(process.output)")
            #expect(process.status == 0, "round \(round), SIGTERM \(moment): \(process.exitDescription); log:\n\(process.output)")
        }
    }
}
