import Foundation
import NimbusProtocol
import NimbusSystem
import Testing
import NimbusTestSupport
@testable import NimbusDaemon

/// Clients that misbehave or come in numbers: each is dealt with alone, and the daemon and the
/// other clients go on.
extension ControlServerTests {
    @Test func aTenMebibyteLineIsRefusedAndOnlyThatClientIsDropped() throws {
        let daemon = try DaemonProcess()
        try daemon.waitUntilIdle()
        let big = try daemon.client(), good = try daemon.client()
        var line = Array(#"{"jsonrpc":"2.0","id":1,"method":"stat","params":{"path":""#.utf8)
        line += [UInt8](repeating: UInt8(ascii: "a"), count: 10 << 20)
        line += Array("\"}}\n".utf8)
        // The daemon closes the connection after 1 MiB, so sending the rest may fail.
        try? big.sendRaw(line, timeout: 20)
        let answer = try big.readAnswer()
        #expect(answer.errorName == "invalid_request" && answer["error"]?["code"]?.int == -32600)
        #expect(answer["error"]?["message"]?.string == "line longer than 1 MiB")
        #expect(try big.readLine(timeout: 10) == nil, "the connection is closed after the error")
        #expect(try good.result("status")["phase"]?.string == "idle")
    }

    @Test func aWatcherThatNeverReadsIsDroppedAndOthersStayResponsive() throws {
        let daemon = try DaemonProcess()
        try daemon.waitUntilIdle()
        let stalled = try daemon.client(), good = try daemon.client()
        #expect(try stalled.result("watch")["watching"]?.bool == true)
        // Never read from `stalled` again. Make many changes with long names (big events)
        // until the daemon gives up on it: then only `good` is connected.
        let longName = String(repeating: "n", count: 180)
        var batch = 0
        let deadline = ContinuousClock.now + .seconds(120)
        while try good.result("status")["clients"]?.int != 1 {
            #expect(ContinuousClock.now < deadline, "the stalled watcher was never dropped")
            if ContinuousClock.now > deadline { return }
            batch += 1
            for index in 0..<500 { try daemon.write("b\(batch)/\(longName)-\(index)", "x") }
            // Responsive: `good` is answered while the stalled watcher's events pile up. How
            // fast is not asserted (a wall-clock limit fails on a loaded machine); the answer
            // must come, within a generous timeout.
            #expect(try good.result("status", timeout: 30)["phase"] != nil)
        }
        #expect(daemon.isRunning)
        #expect(daemon.log.contains("stopped reading its events"))
        // The daemon keeps serving new clients and watchers.
        let fresh = try daemon.client()
        #expect(try fresh.result("watch")["watching"]?.bool == true)
        #expect(try fresh.result("status")["phase"] != nil)
    }

    @Test func twoHundredClientsAtOnce() throws {
        let daemon = try DaemonProcess()
        try daemon.waitUntilIdle()
        let clients = try (0..<200).map { _ in try daemon.client() }
        for (index, client) in clients.enumerated() {
            try client.send("{\"jsonrpc\":\"2.0\",\"id\":\(index),\"method\":\"status\"}")
        }
        for (index, client) in clients.enumerated() {
            let answer = try client.readAnswer()
            #expect(answer["id"]?.int == Int64(index) && answer["result"]?["clients"]?.int ?? 0 >= 1, "\(answer)")
        }
        #expect(try clients[0].result("status")["clients"]?.int == 200)
    }

    @Test func vanishingClientsDoNotHurtTheDaemon() throws {
        let daemon = try DaemonProcess { daemon in
            for index in 0..<300 { try daemon.write("d/f\(index)", "x") }
        }
        try daemon.waitUntilIdle()
        for _ in 0..<50 {
            let client = try daemon.client()
            // Requests whose answers come later (worker, engine thread), then gone at once:
            // writing to a closed socket must not raise SIGPIPE in the daemon.
            for id in 0..<20 { try client.send("{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"list\",\"params\":{\"recursive\":true}}") }
            try client.send(#"{"jsonrpc":"2.0","id":99,"method":"rescan"}"#)
            try client.send(#"{"jsonrpc":"2.0","id":98,"method":"acquire","params":{"path":"d","mode":"exclusive"}}"#)
        }
        let survivor = try daemon.client()
        #expect(try survivor.result("status")["phase"] != nil)
        try Polling.wait("the vanished clients' leases to be released") {
            try survivor.result("locks")["locks"]?.array?.isEmpty == true
        }
        #expect(daemon.isRunning)
    }

    @Test func aHalfClosedClientStillGetsItsAnswers() throws {
        let daemon = try DaemonProcess()
        try daemon.waitUntilIdle()
        let client = try daemon.client()
        try client.send(#"{"jsonrpc":"2.0","id":1,"method":"rescan"}"#)
        try client.socket.shutdownWriting()
        #expect(try client.readAnswer()["result"]?["tracked"] != nil)
        #expect(try client.readLine(timeout: 10) == nil, "then the daemon closes")
    }
}
