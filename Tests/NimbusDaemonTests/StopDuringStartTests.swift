import Foundation
import Testing
import NimbusSystem
import NimbusTestSupport
import NimbusVocabulary
@testable import NimbusDaemon

/// A stop asked for while nimbusd starts (SIGTERM during the first pass): systemd is told
/// STOPPING=1 and never READY=1, which would say the service is up while it is going away.
@Suite struct StopDuringStartTests {
    /// The runtime that is asked to stop before its first pass is over never calls `onReady`
    /// (nimbusd's READY=1) and ends. Before, READY=1 followed the stopped first pass.
    @Test func aRuntimeStoppedDuringItsStartIsNeverReady() throws {
        let pair = MemoryRuntime()
        try pair.local.write(rp("notes.txt"), "hello")
        let runtime = pair.runtime
        // As the signal thread does when SIGTERM comes while the first pass runs.
        runtime.stop()
        var readyCalls = 0
        runtime.run { readyCalls += 1 }
        #expect(readyCalls == 0, "a runtime stopped during its start must not say it is ready")
        #expect(pair.content(pair.cloud, "notes.txt") == nil, "the first pass stopped before its copy")
    }

    /// Once STOPPING=1 is sent, READY=1 is not (the engine thread may have looked at the stop
    /// flag just before the signal thread set it): systemd gets STOPPING=1 alone.
    @Test func noReadyAfterStopping() throws {
        let directory = try TemporaryDirectory.make("nimbus-notify")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/notify.sock"
        let socket = try UnixDatagramSocket.bound(to: path)
        defer { socket.close() }
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path])

        notifier.ready(status: "Synced 0 entries")
        notifier.stopping()
        notifier.ready(status: "Synced 1 entries")
        notifier.status("stopping")  // Marks the end of what was sent.
        var received: [String] = []
        while let bytes = try socket.receive(timeout: .seconds(10)) {
            let text = String(decoding: bytes, as: UTF8.self)
            received.append(text)
            if text == "STATUS=stopping" { break }
        }
        #expect(received == ["READY=1\nSTATUS=Synced 0 entries", "STOPPING=1", "STATUS=stopping"], "\(received)")
    }
}
