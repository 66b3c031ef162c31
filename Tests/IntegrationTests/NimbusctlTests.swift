import Foundation
import Glibc
import NimbusTestTraits
import Testing
import NimbusTestSupport

/// nimbusctl against a real nimbusd on temporary folders: every command, in human and
/// `--json` form, and the exit statuses 0, 1, 64 and 69.
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(3)))
struct NimbusctlTests {
    @Test func status() async throws {
        try await CtlDaemon.with { d in
            let human = try await d.ctl(["status"])
            #expect(human.status == 0, "\(human)")
            #expect(human.stdout.contains("Local     \(d.local)"), "\(human)")
            #expect(human.stdout.contains("Cloud     \(d.cloud)"))
            #expect(human.stdout.hasPrefix("● Up to date\n"), "\(human)")
            #expect(try await d.ctl(["--json", "status"]).json()["versionsBytes"] as? Int == 0)
            #expect(human.stdout.contains("test · instance default"))
            let json = try await d.ctl(["--json", "status"]).json()
            #expect(json["localRoot"] as? String == d.local)
            #expect(json["deviceName"] as? String == "test")
            #expect(json["paused"] as? Bool == false)
            #expect(json["tracked"] is Int)
        }
    }

    @Test func listAndInfoFromInsideAndOutsideTheFolder() async throws {
        try await CtlDaemon.with { d in
            try d.write("a.txt", "hello")
            try d.write("Docs/r.txt", "report")
            try await d.waitForCloud("Docs/r.txt", "report")
            try await d.waitForCloud("a.txt", "hello")

            let ls = try await d.ctl(["ls"])
            #expect(ls.status == 0, "\(ls)")
            #expect(ls.stdout.contains("✓  a.txt"), "\(ls)")
            #expect(ls.stdout.contains("Docs/"))
            #expect(!ls.stdout.contains("r.txt"), "not recursive")
            let recursive = try await d.ctl(["ls", "-r", "--json"]).json()
            let paths = (recursive["entries"] as? [[String: Any]])?.compactMap { $0["path"] as? String }
            #expect(paths == ["Docs", "Docs/r.txt", "a.txt"])
            let filtered = try await d.ctl(["ls", "-r", "--state", "conflict", "--json"]).json()
            #expect((filtered["entries"] as? [Any])?.isEmpty == true)

            // From inside the synced folder, relative to the current folder.
            let inside = try await d.ctl(["info", "r.txt"], in: d.local + "/Docs")
            #expect(inside.status == 0, "\(inside)")
            #expect(inside.stdout.contains("Path       Docs/r.txt"), "\(inside)")
            #expect(inside.stdout.contains("State      ✓ in sync"))
            let here = try await d.ctl(["ls"], in: d.local + "/Docs")
            #expect(here.stdout.contains("r.txt") && !here.stdout.contains("a.txt"), "\(here)")
            // From elsewhere, relative to the root; absolute paths inside the folder work too.
            let json = try await d.ctl(["--json", "info", "Docs/r.txt"]).json()
            #expect(json["path"] as? String == "Docs/r.txt")
            #expect(json["size"] as? Int == 6)
            #expect(json["state"] as? String == "downloaded")
            #expect(try await d.ctl(["info", d.local + "/a.txt"]).status == 0)

            let outside = try await d.ctl(["info", "/etc/passwd"])
            #expect(outside.status == 64, "\(outside)")
            #expect(outside.stderr.contains("'/etc/passwd' is outside the synced folder"))
            let missing = try await d.ctl(["info", "nothing-here"])
            #expect(missing.status == 1, "\(missing)")
            #expect(missing.stderr.contains("reason:") && missing.stderr.contains("suggestion:"))
            let missingJSON = try await d.ctl(["--json", "info", "nothing-here"])
            #expect(missingJSON.status == 1)
            let error = try missingJSON.json()["error"] as? [String: Any]
            #expect(error?["name"] as? String == "not_found", "\(missingJSON)")
        }
    }

    @Test func evictPinAndDownloadInMirrorMode() async throws {
        try await CtlDaemon.with { d in
            try d.write("a.txt", "hello")
            try await d.waitForCloud("a.txt", "hello")
            #expect(try await d.ctl(["pin", "a.txt"]).status == 0)
            let refused = try await d.ctl(["evict", "a.txt"])
            #expect(refused.status == 1, "\(refused)")
            #expect(refused.stderr.contains("pinned") && refused.stderr.contains("suggestion: "), "\(refused)")
            let json = try await d.ctl(["--json", "evict", "a.txt"])
            let error = try json.json()["error"] as? [String: Any]
            #expect(error?["name"] as? String == "pinned", "\(json)")
            #expect(error?["exitCode"] as? Int == 1)
            #expect(try await d.ctl(["unpin", "a.txt"]).status == 0)
            let evicted = try await d.ctl(["--json", "evict", "a.txt"])
            #expect(try evicted.json()["state"] as? String == "notDownloaded", "\(evicted)")
            #expect(try evicted.json()["residency"] as? String == "evicted")
            #expect(!FileManager.default.fileExists(atPath: d.local + "/a.txt"))
            #expect(FileManager.default.fileExists(atPath: d.local + "/a.txt.nimbus"))
            let downloaded = try await d.ctl(["download", "a.txt.nimbus"])
            #expect(downloaded.status == 0, "\(downloaded)")
            #expect(try String(contentsOfFile: d.local + "/a.txt", encoding: .utf8) == "hello")
            #expect(!FileManager.default.fileExists(atPath: d.local + "/a.txt.nimbus"))
        }
    }

    @Test func conflictsAndResolve() async throws {
        try await CtlDaemon.with { d in
            try d.write("notes.txt", "base")
            try await d.waitForCloud("notes.txt", "base")
            #expect(try await d.ctl(["conflicts"]).stdout == "No conflicts.\n")
            // Both sides change while sync is paused: a conflict when it resumes.
            #expect(try await d.ctl(["pause"]).status == 0)
            try d.write("notes.txt", "local edit")
            try d.write("notes.txt", "cloud edit", side: "cloud")
            #expect(try await d.ctl(["resume"]).status == 0)
            _ = try await d.ctl(["rescan"])
            try await Polling.eventually("notes.txt in conflict") {
                let result = try await d.ctl(["--json", "conflicts"])
                let conflicts = try result.json()["conflicts"] as? [[String: Any]] ?? []
                return conflicts.contains { $0["path"] as? String == "notes.txt" } ? nil : "\(result)"
            }
            let human = try await d.ctl(["conflicts"])
            #expect(human.stdout.contains("!  notes.txt  this device's version: notes (conflict"), "\(human)")
            let listed = try await d.ctl(["ls", "--state", "conflict"])
            #expect(listed.stdout.contains("!  notes.txt"), "\(listed)")

            let resolved = try await d.ctl(["resolve", "notes.txt", "--keep", "both"])
            #expect(resolved.status == 0, "\(resolved)")
            #expect(resolved.stdout.contains("Kept both versions of notes.txt"))
            let again = try await d.ctl(["--json", "resolve", "notes.txt", "--keep", "cloud"])
            #expect(again.status == 1, "\(again)")
            #expect((try again.json()["error"] as? [String: Any])?["name"] as? String == "not_in_conflict")
            let none = try await d.ctl(["--json", "conflicts"]).json()
            #expect((none["conflicts"] as? [Any])?.isEmpty == true)
        }
    }

    @Test func versionsAndRestore() async throws {
        try await CtlDaemon.with { d in
            try d.write("r.txt", "one")
            try await d.waitForCloud("r.txt", "one")
            try d.write("r.txt", "two, longer")
            try await d.waitForCloud("r.txt", "two, longer")

            let listing = try await d.ctl(["--json", "versions", "r.txt"]).json()
            let versions = listing["versions"] as? [[String: Any]] ?? []
            #expect(listing["path"] as? String == "r.txt")
            let id = try #require(versions.first?["id"] as? String, "\(listing)")
            #expect(versions.first?["size"] as? Int == 3)
            let human = try await d.ctl(["versions", "r.txt"])
            #expect(human.stdout.contains("VERSION") && human.stdout.contains(id), "\(human)")
            #expect(human.stdout.contains("nimbusctl --socket \(d.socket) restore r.txt --version VERSION"), "\(human)")

            let restored = try await d.ctl(["restore", "r.txt", "--version", id, "--to", "old.txt"])
            #expect(restored.status == 0, "\(restored)")
            #expect(restored.stdout.contains("Restored version \(id) of r.txt as old.txt"))
            try await Polling.eventually("old.txt to sync down") {
                d.read("old.txt") == "one" ? nil : "local old.txt: \(d.read("old.txt") ?? "missing")"
            }
            let json = try await d.ctl(["--json", "restore", "r.txt", "--to", "old2.txt"])
            #expect(json.status == 0, "\(json)")
            #expect(try json.json()["restoredTo"] as? String == "old2.txt")
            let unknown = try await d.ctl(["--json", "restore", "r.txt", "--version", "no-such-version"])
            #expect(unknown.status == 1, "\(unknown)")
        }
    }

    @Test func pauseResumeRescanAndHeldDeletes() async throws {
        try await CtlDaemon.with { d in
            let paused = try await d.ctl(["pause"])
            #expect(paused.status == 0 && paused.stdout.contains("Paused"), "\(paused)")
            #expect(try await d.ctl(["--json", "status"]).json()["paused"] as? Bool == true)
            #expect(try await d.ctl(["status"]).stdout.contains("Paused"))
            #expect(try await d.ctl(["--json", "pause"]).json()["paused"] as? Bool == true)
            let resumed = try await d.ctl(["resume"])
            #expect(resumed.status == 0 && resumed.stdout.contains("Resumed"), "\(resumed)")
            #expect(try await d.ctl(["--json", "resume"]).json()["paused"] as? Bool == false)

            let rescan = try await d.ctl(["rescan"])
            #expect(rescan.status == 0 && rescan.stdout.contains("Rescanned both folders"), "\(rescan)")
            #expect(try await d.ctl(["--json", "rescan"]).json()["tracked"] is Int)

            for command in ["confirm-deletes", "revert-deletes"] {
                let human = try await d.ctl([command])
                #expect(human.status == 0 && human.stdout == "No deletions were held.\n", "\(human)")
                #expect(try await d.ctl(["--json", command]).json()["count"] as? Int == 0)
            }
        }
    }

    @Test func watchPrintsEventsUntilTheDaemonGoesAway() async throws {
        try await CtlDaemon.with { daemon in try await watch(daemon) }
    }

    func watch(_ daemon: CtlDaemon) async throws {
        let json = try daemon.background(["--json", "watch"], separateErrors: true)
        let human = try daemon.background(["watch"], separateErrors: true)
        // A new file until both watchers have reported one: a watcher may subscribe after
        // the first write, so one file alone could be missed.
        var written: [String] = []
        try await Polling.eventually("both watchers to report a new file") {
            let name = "w\(written.count).txt"
            try daemon.write(name, "x")
            written.append(name)
            let sawJSON = written.contains { json.output.contains(#""path":"\#($0)""#) }
            let sawHuman = written.contains { human.output.contains("✓ \($0)  in sync") }
            return sawJSON && sawHuman ? nil : "json:\n\(json.output)\nhuman:\n\(human.output)"
        }
        for line in json.output.split(separator: "\n") {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["jsonrpc"] as? String == "2.0", "\(line)")
            #expect(["event", "progress"].contains(object?["method"] as? String), "\(line)")
        }
        // When the daemon stops, watch ends: the daemon is not reachable any more, exit 69.
        await daemon.terminate()
        try await Polling.eventually("watch to exit") { human.isRunning || json.isRunning ? "still running" : nil }
        #expect(human.status == 69, "stderr: \(human.errors)")
        #expect(human.errors.contains("closed the connection"))
        #expect(json.status == 69)
    }

    @Test func noDaemonExits69WithHowToStartIt() async throws {
        let scratch = try TemporaryDirectory.make("nimbus-ctl")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let environment = ["XDG_RUNTIME_DIR": scratch, "HOME": scratch, "PATH": "/usr/bin:/bin"]
        func run(_ arguments: [String]) async throws -> CtlResult {
            try await Polling.blocking {
                try CtlHarness.run(NimbusdProcess.nimbusctl, arguments, environment: environment, currentDirectory: scratch, scratch: scratch)
            }
        }
        let human = try await run(["status"])
        #expect(human.status == 69, "\(human)")
        #expect(human.stderr.contains("the Nimbus daemon is not running"))
        #expect(human.stderr.contains("\(scratch)/nimbus/default.sock"))
        #expect(human.stderr.contains("systemctl --user start nimbusd") && human.stderr.contains("run 'nimbusd'"))
        let instance = try await run(["--instance", "work", "ls"])
        #expect(instance.status == 69)
        #expect(instance.stderr.contains("systemctl --user start nimbusd@work"), "\(instance)")
        let json = try await run(["--json", "--socket", scratch + "/none.sock", "conflicts"])
        #expect(json.status == 69)
        let error = try json.json()["error"] as? [String: Any]
        #expect(error?["name"] as? String == "not_running", "\(json)")
        #expect(error?["exitCode"] as? Int == 69)
        #expect((error?["suggestion"] as? String)?.contains("nimbusd --socket \(scratch)/none.sock") == true)
    }
}
