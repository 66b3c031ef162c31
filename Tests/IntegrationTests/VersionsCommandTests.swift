import Foundation
import Glibc
import NimbusTestTraits
import Testing
import NimbusTestSupport

/// `versions --all`, `prune`, the store's size in `status`, and restoring a deleted folder
/// (issue #13), with the real programs.
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(3)))
struct VersionsCommandTests {
    /// At debug level, so that the log of a failure shows every action (it showed a2 restored
    /// where a1 was asked for: `VersionStoreTests.twoVersionsDisplacedInOneSecondKeepTheirOrder`).
    @Test func aDeletedFolderIsRestoredWithADryRunFirst() async throws {
        try await CtlDaemon.with(arguments: ["--log-level", "debug"]) { d in
            do {
                try d.write("docs/a.txt", "a1")
                try d.write("docs/sub/b c.txt", "b1")
                try await d.waitForCloud("docs/sub/b c.txt", "b1")
                try await d.waitForCloud("docs/a.txt", "a1")
                try await Task.sleep(for: .seconds(1.1))  // `--at` takes whole seconds
                let stamp = Date().timeIntervalSince1970
                try await Task.sleep(for: .seconds(1.1))
                try d.write("docs/a.txt", "a2, longer")
                try await d.waitForCloud("docs/a.txt", "a2, longer")
                try FileManager.default.removeItem(atPath: d.local + "/docs")
                try await Polling.eventually("the folder to go from the cloud") {
                    FileManager.default.fileExists(atPath: d.cloud + "/docs") ? "still there" : nil
                }
                let status = try await d.ctl(["--json", "status"]).json()
                #expect(status["versionsCount"] as? Int == 3, "\(status)")
                #expect(status["versionsBytes"] as? Int == 2 + 10 + 2, "\(status)")
                let human = try await d.ctl(["status"])
                #expect(human.stdout.contains("Versions  3 previous versions kept (14 B)"), "\(human)")

                let all = try await d.ctl(["versions", "--all"])
                #expect(all.status == 0, "\(all)")
                #expect(all.stdout.contains("docs/a.txt") && all.stdout.contains("docs/sub/b c.txt"), "\(all)")
                #expect(all.stdout.contains("3 versions of 2 files, 14 B."), "\(all)")
                let allJSON = try await d.ctl(["--json", "versions", "--all", "docs/sub"]).json()
                #expect((allJSON["versions"] as? [[String: Any]])?.compactMap { $0["path"] as? String } == ["docs/sub/b c.txt"])
                let noPath = try await d.ctl(["versions"])
                #expect(noPath.status == 64, "\(noPath)")

                // As of before the edit: a.txt comes back as a1. A dry run first changes nothing.
                let dry = try await d.ctl(["restore", "docs", "--at", isoUTC(stamp), "--dry-run"])
                #expect(dry.status == 0, "\(dry)")
                #expect(dry.stdout.hasPrefix("Would restore 2 files of docs:\n"), "\(dry)")
                #expect(dry.stdout.contains("docs/a.txt") && dry.stdout.contains("docs/sub/b c.txt"), "\(dry)")
                #expect(!FileManager.default.fileExists(atPath: d.cloud + "/docs"), "a dry run changes nothing")
                let restored = try await d.ctl(["--json", "restore", "docs", "--at", isoUTC(stamp)])
                #expect(restored.status == 0, "\(restored)")
                #expect((try restored.json()["files"] as? [Any])?.count == 2, "\(restored)")
                try await Polling.eventually("the folder to come back here", timeout: .seconds(60)) {
                    d.read("docs/a.txt") == "a1" && d.read("docs/sub/b c.txt") == "b1" ? nil : "not yet"
                }
                let newest = try await d.ctl(["restore", "docs", "--dry-run"])
                #expect(newest.stdout.contains("Would restore 1 file of docs:"), "only a.txt differs from its newest version: \(newest)")
                let badTime = try await d.ctl(["restore", "docs", "--at", "last tuesday"])
                #expect(badTime.status == 64 && badTime.stderr.contains("cannot read the time"), "\(badTime)")
                let negative = try await d.ctl(["restore", "docs", "--at", "-2h"])
                #expect(negative.status == 64 && negative.stderr.contains("invalid value '-2h' for --at: how long ago must be 0 or more"),
                        "a negative duration is out of range, not a missing value: \(negative)")

                let prune = try await d.ctl(["prune"])
                #expect(prune.status == 0 && prune.stdout.hasPrefix("Nothing to prune; "), "\(prune)")
                #expect(try await d.ctl(["--json", "prune"]).json()["removed"] as? Int == 0)
            } catch {
                throw HarnessFailure("\(error)\n\(d.logTail())")
            }
        }
    }

    /// Two versions displaced within one second, 0.2 s and 0.8 s into it: `--at` with a
    /// fraction picks the content the file held at that instant. Before, a fraction was
    /// refused, and a time read to the whole second could not tell them apart.
    @Test func restoreAtAFractionOfASecondTellsTwoVersionsOfOneSecondApart() async throws {
        try await CtlDaemon.with { d in
            try d.write("a.txt", "now")
            try await d.waitForCloud("a.txt", "now")
            // Named as the daemon names them, a minute ago (well inside the retention).
            let second = Date().timeIntervalSince1970.rounded(.down) - 60
            let ids = ["200000000", "800000000"].map { utcParts(second).stamp + "." + $0 + "-test" }
            for (id, text) in zip(ids, ["first", "second"]) {
                try d.write(".nimbus/versions/a.txt/" + id + ".nimbus-version", text, side: "cloud")
            }
            for (fraction, expected) in [(".5", ids[1]), (".1", ids[0]), (".199999999", ids[0]), (".2", ids[1])] {
                let result = try await d.ctl(["--json", "restore", "a.txt", "--at", utcParts(second).iso + fraction + "Z", "--dry-run"])
                #expect(result.status == 0, "\(fraction): \(result)")
                #expect((try? result.json())?["version"] as? String == expected, "at \(fraction) s: \(result)")
            }
            let restored = try await d.ctl(["restore", "a.txt", "--at", utcParts(second).iso + ".5Z"])
            #expect(restored.status == 0, "\(restored)")
            try await Polling.eventually("the version of 0.8 s to come back here") {
                d.read("a.txt") == "second" ? nil : "a.txt holds \(d.read("a.txt") ?? "nothing")"
            }
        }
    }

    /// "2024-03-01T14:30:05Z" for a time in seconds since 1970.
    func isoUTC(_ seconds: Double) -> String { utcParts(seconds).iso + "Z" }

    /// The UTC time of `seconds` (rounded down) as "2024-03-01T14:30:05" and as a version
    /// name's stamp, "2024-03-01_143005".
    func utcParts(_ seconds: Double) -> (iso: String, stamp: String) {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let date = "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))"
        return (date + "T" + two(parts.tm_hour) + ":" + two(parts.tm_min) + ":" + two(parts.tm_sec),
                date + "_" + two(parts.tm_hour) + two(parts.tm_min) + two(parts.tm_sec))
    }
}
