import Foundation
import Glibc
import NimbusTestTraits
import Testing
import NimbusTestSupport

/// What the user sees is the truth (issue #13): `status` names what needs the user and says
/// so in its exit status, `watch` shows every change the daemon makes, a conflict's losing
/// side is found under the name the user knows. Real nimbusd and nimbusctl.
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(3)))
struct StatusTruthTests {
    func statusJSON(_ d: CtlDaemon) async throws -> [String: Any] {
        let result = try await d.ctl(["--json", "status"])
        return try result.json()
    }

    @Test func statusNamesHeldDeletionsConflictsAndAMissingFolderAndExitsOne() async throws {
        try await CtlDaemon.with { d in
            for index in 0..<120 { try d.write("tree/f\(index).txt", "\(index)") }
            try d.write("notes.txt", "base")
            try await Polling.eventually("the tree to reach the cloud", timeout: .seconds(60)) {
                let count = (try? FileManager.default.contentsOfDirectory(atPath: d.cloud + "/tree").count) ?? 0
                return count == 120 && d.read("notes.txt", side: "cloud") == "base" ? nil : "\(count) files in the cloud"
            }
            // A conflict: both sides change while paused.
            #expect(try await d.ctl(["pause"]).status == 0)
            let paused = try await d.ctl(["status"])
            #expect(paused.status == 1 && paused.stdout.hasPrefix("● Paused: run 'nimbusctl --socket \(d.socket) resume'"), "\(paused)")
            try d.write("notes.txt", "local edit")
            try d.write("notes.txt", "cloud edit", side: "cloud")
            #expect(try await d.ctl(["resume"]).status == 0)
            try await Polling.eventually("the conflict") {
                let status = try await statusJSON(d)
                return status["conflicts"] as? Int == 1 ? nil : "\(status)"
            }
            let conflicted = try await d.ctl(["status"])
            #expect(conflicted.status == 1, "\(conflicted)")
            #expect(conflicted.stdout.hasPrefix("● Needs you: 1 conflict; see 'nimbusctl --socket \(d.socket) conflicts'\n"), "\(conflicted)")

            // An ordinary rm -rf: the guard holds the deletions, and status says so first.
            try FileManager.default.removeItem(atPath: d.local + "/tree")
            try await Polling.eventually("the deletions to be held") {
                let status = try await statusJSON(d)
                return (status["heldDeletes"] as? Int ?? 0) > 100 ? nil : "\(status)"
            }
            let held = try await d.ctl(["status"])
            #expect(held.status == 1, "\(held)")
            #expect(held.stdout.hasPrefix("● Needs you: "), "\(held)")
            #expect(held.stdout.contains("deletions held by the safety guard; decide with nimbusctl --socket \(d.socket) confirm-deletes "
                                         + "or nimbusctl --socket \(d.socket) revert-deletes\n"), "\(held)")
            #expect(held.stdout.contains("1 file changed on both sides"), "\(held)")
            #expect(!held.stdout.contains("Errors"), "a held deletion leaves nothing in error: \(held)")

            // The cloud folder goes away (an unmounted disk): the pair stops, and says so first.
            try FileManager.default.moveItem(atPath: d.cloud, toPath: d.root + "/cloud-away")
            try await Polling.eventually("the pair to stop") {
                let status = try await statusJSON(d)
                return status["phase"] as? String == "halted" ? nil : "\(status)"
            }
            let stopped = try await d.ctl(["status"])
            print("nimbusctl status of a pair with held deletions, a conflict and a missing cloud folder:\n\(stopped.stdout)")
            #expect(stopped.status == 1, "\(stopped)")
            #expect(stopped.stdout.hasPrefix("● Stopped: The cloud folder \(d.cloud) cannot be opened"), "\(stopped)")
            #expect(stopped.stdout.contains("deletions held by the safety guard\n"), "\(stopped)")
            #expect(stopped.stdout.contains("  Undo       nimbusctl --socket \(d.socket) revert-deletes"), "\(stopped)")
            #expect(stopped.stdout.contains("  Conflicts  1 file changed on both sides"), "\(stopped)")
            try FileManager.default.moveItem(atPath: d.root + "/cloud-away", toPath: d.cloud)
            try await Polling.eventually("the pair to resume") {
                let status = try await statusJSON(d)
                return status["phase"] as? String != "halted" ? nil : "\(status)"
            }

            // Deciding: the files come back; the conflict's losing side is found by its name.
            #expect(try await d.ctl(["revert-deletes"]).status == 0)
            let resolved = try await d.ctl(["resolve", "notes.txt", "--keep", "cloud"])
            #expect(resolved.status == 0, "\(resolved)")
            #expect(resolved.stdout.contains("see 'nimbusctl --socket \(d.socket) versions notes.txt'"), "\(resolved)")
            let versions = try await d.ctl(["--json", "versions", "notes.txt"]).json()["versions"] as? [[String: Any]] ?? []
            #expect(versions.contains { $0["size"] as? Int == "local edit".utf8.count }, "\(versions)")
            try await Polling.eventually("all in sync again", timeout: .seconds(60)) {
                let result = try await d.ctl(["status"])
                return result.status == 0 && result.stdout.hasPrefix("● Up to date\n") ? nil : "\(result)"
            }
            #expect(d.read("tree/f7.txt") == "7")
            #expect(d.read("notes.txt") == "cloud edit")
            let restored = try await d.ctl(["restore", "notes.txt", "--to", "mine.txt"])
            #expect(restored.status == 0, "\(restored)")
            try await Polling.eventually("this device's version to come back") {
                d.read("mine.txt") == "local edit" ? nil : "mine.txt: \(d.read("mine.txt") ?? "missing")"
            }
        }
    }

    @Test func watchShowsDeletionsAndRenames() async throws {
        try await CtlDaemon.with { d in
            let json = try d.background(["--json", "watch"], separateErrors: true)
            let human = try d.background(["watch"], separateErrors: true)
            defer { json.stop(); human.stop() }
            var written: [String] = []
            // Until both `watch` processes have connected: a new file every half second, for up
            // to a minute (15 s passed in a loaded full run, the human one not yet connected).
            try await Polling.eventually("both watchers to report a new file", timeout: .seconds(60), interval: .milliseconds(500)) {
                let name = "w\(written.count).txt"
                try d.write(name, "x", side: "cloud")
                written.append(name)
                let sawJSON = written.contains { json.output.contains(#""path":"\#($0)""#) }
                let sawHuman = written.contains { human.output.contains("\($0)  in sync") }
                return sawJSON && sawHuman ? nil : "json:\n\(json.output)\nhuman:\n\(human.output)"
            }
            let name = try #require(written.last)
            try await Polling.eventually("\(name) to arrive here") { d.read(name) == "x" ? nil : "not yet" }
            try FileManager.default.moveItem(atPath: d.cloud + "/" + name, toPath: d.cloud + "/renamed.txt")
            try await Polling.eventually("the rename in watch") {
                human.output.contains("→ \(name) → renamed.txt  renamed here")
                    && json.output.contains(#""type":"renamed""#) && json.output.contains(#""from":"\#(name)""#)
                    ? nil : "json:\n\(json.output)\nhuman:\n\(human.output)"
            }
            try FileManager.default.removeItem(atPath: d.cloud + "/renamed.txt")
            try await Polling.eventually("the deletion in watch") {
                human.output.contains("− renamed.txt  deleted here") && json.output.contains(#""type":"deleted""#)
                    ? nil : "json:\n\(json.output)\nhuman:\n\(human.output)"
            }
            // And the other way: deleted here, so the daemon deletes it in the cloud.
            try FileManager.default.removeItem(atPath: d.local + "/" + written[0])
            try await Polling.eventually("the cloud deletion in watch") {
                human.output.contains("− \(written[0])  deleted in the cloud folder (kept among the versions)")
                    ? nil : "human:\n\(human.output)"
            }
            await json.stop()
            await human.stop()
        }
    }
}
