import Foundation
import NimbusCore
import NimbusProtocol
import NimbusVocabulary
import Testing
@testable import NimbusDaemon
import NimbusTestSupport

extension ControlServerTests {
    /// A script on `watch` learns that the mass-delete guard holds deletions (they were told
    /// only by status, the log and the desktop before): the side, how many, the first paths.
    @Test func watchTellsOfDeletionsHeld() throws {
        let files = 150  // More than the guard's minimum of 100, and all of them: above 50 %.
        let daemon = try DaemonProcess { daemon in
            for index in 0..<files { try daemon.write(String(format: "gone/f%03d", index), "x", in: daemon.cloud) }
        }
        try daemon.waitUntilIdle(timeout: .seconds(120))
        let watcher = try daemon.client()
        #expect(try watcher.result("watch", #"{"progress":false}"#)["watching"]?.bool == true)
        // Moved out in one rename, so that the deletions come as one batch even under load.
        try FileManager.default.moveItem(atPath: daemon.cloud + "/gone", toPath: daemon.root + "/gone")
        let held = try nextEvent(of: "deletions-held", from: watcher)
        #expect(held["side"]?.string == "local", "held in the local folder: \(held)")
        #expect((held["count"]?.int ?? 0) >= Int64(files), "the files (and their folder): \(held)")
        let paths = held["paths"]?.array?.compactMap(\.string) ?? []
        #expect(paths.count == ControlEventFanOut.heldPathsShown && paths == paths.sorted()
                && paths.allSatisfy { $0.hasPrefix("gone") }, "the first ten, sorted: \(held)")
        #expect(held["path"]?.string == paths.first, "\(held)")
        #expect(daemon.read("gone/f149", in: daemon.local) == "x", "the deletion is held, not applied")
    }

    /// The event lines the daemon encodes for the two kinds `watch` did not tell before.
    @Test func heldDeletionsAndRefusedFetchesHaveEventParams() throws {
        let paths = try (0..<12).reversed().map { try RelativePath(validating: "dir/file-\(String(format: "%02d", $0))") }
        let wall = WallInstant(nanoseconds: 1_700_000_000_000_000_000)
        let held = try #require(ControlEventFanOut.event(.deletionsHeld(on: .cloud, paths), wall: wall))
        #expect(held.type == "deletions-held" && held.side == "cloud" && held.count == 12)
        #expect(held.paths == (0..<10).map { "dir/file-" + String(format: "%02d", $0) }, "the first ten, in order")
        #expect(held.path == "dir/file-00" && held.timeNs == wall.nanoseconds)
        #expect(held.keptDeletes == nil, "nothing applied just before: no count")
        let withKept = try #require(ControlEventFanOut.event(.deletionsHeld(on: .local, paths, alreadyApplied: 131), wall: wall))
        #expect(withKept.keptDeletes == 131, "the deletions applied just before and kept, as status.keptDeletes counts them")
        let refused = try #require(ControlEventFanOut.event(
            .fetchesRefused(try RelativePath(validating: "photos/a.jpg"), limit: 60, program: "tracker-miner-f"), wall: wall))
        #expect(refused.type == "fetches-refused" && refused.path == "photos/a.jpg")
        #expect(refused.limit == 60 && refused.program == "tracker-miner-f")
        let unnamed = try #require(ControlEventFanOut.event(
            .fetchesRefused(try RelativePath(validating: "b"), limit: 5, program: nil), wall: wall))
        #expect(unnamed.program == nil && unnamed.limit == 5)
    }

    /// Reads notifications until an `event` of `type` (other events and answers are skipped).
    private func nextEvent(of type: String, from client: SocketClient, timeout: Duration = .seconds(120)) throws -> WireJSON {
        let deadline = ContinuousClock.now + timeout
        var seen: [String] = []
        while ContinuousClock.now < deadline {
            guard let line = try client.readLine(timeout: ContinuousClock.now.duration(to: deadline).seconds) else {
                throw HarnessFailure("the daemon closed the watch connection before a \(type) event; saw \(seen.suffix(20))")
            }
            let message = try WireJSON.parse(line)
            guard message["method"]?.string == "event", let params = message["params"] else { continue }
            if params["type"]?.string == type { return params }
            seen.append(params["type"]?.string ?? "?")
        }
        throw HarnessFailure("no \(type) event within \(timeout); saw \(seen.suffix(20))")
    }
}
