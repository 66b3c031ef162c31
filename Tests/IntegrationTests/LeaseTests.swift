import Foundation
import NimbusClient
import Glibc
import Synchronization
import NimbusTestTraits
import Testing
import NimbusTestSupport

/// Leases for applications (issue #8) against the real daemon, through `nimbusctl lock`:
/// nothing half-written reaches the cloud, a killed holder frees its lease, leases on one path
/// take turns, and lock passes on its command's exit status.
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(3)))
struct LeaseTests {
    /// The leases held or waited for by connections (the daemon's own locks left out).
    func clientLeases(_ d: CtlDaemon) async throws -> [[String: Any]] {
        let result = try await d.ctl(["--json", "locks"])
        guard result.status == 0 else { throw HarnessFailure("locks failed: \(result)") }
        return ((try result.json()["locks"] as? [[String: Any]]) ?? []).filter { $0["owner"] != nil }
    }

    func waitForNoLeases(_ d: CtlDaemon) async throws {
        try await Polling.eventually("every lease to be released", timeout: .seconds(30)) {
            let leases = try await clientLeases(d)
            return leases.isEmpty ? nil : "still held: \(leases)"
        }
    }

    func waitForLease(_ d: CtlDaemon, _ path: String, state: String = "granted") async throws {
        try await Polling.eventually("a \(state) lease on \(path)", timeout: .seconds(30)) {
            let leases = try await clientLeases(d)
            return leases.contains { $0["path"] as? String == path && $0["state"] as? String == state } ? nil : "leases: \(leases)"
        }
    }

    @Test func aWriterUnderAnExclusiveLeaseIsNeverUploadedHalfWritten() async throws {
        try await CtlDaemon.with { d in
            let old = "old\n"
            try d.write("db.txt", old)
            try await d.waitForCloud("db.txt", old)
            let final = old + (1...100).map { String(format: "%03d\n", $0) }.joined()
            let file = d.local + "/db.txt"
            let done = d.root + "/writer.done"
            let writer = try d.background(["lock", "db.txt", "--", "sh", "-c",
                                              "for i in $(seq 1 100); do printf '%03d\\n' \"$i\" >> '\(file)'; sleep 0.01; done; date +%s.%N > '\(done)'"])
            // Watch the cloud copy the whole time: old or final, nothing between, until the
            // final one arrives (deadline 5 s after the writer's last append).
            var polls = 0
            var arrived: Double?
            var finished: Double?
            while arrived == nil {
                let text = d.read("db.txt", side: "cloud") ?? "(absent)"
                #expect(text == old || text == final || text == "(absent)",
                        "the cloud got a partial version (\(text.split(separator: "\n").count) lines)")
                if text == final { arrived = Date().timeIntervalSince1970 }
                if finished == nil, let stamp = try? String(contentsOfFile: done, encoding: .utf8),
                   let seconds = Double(stamp.trimmingCharacters(in: .whitespacesAndNewlines)) { finished = seconds }
                if let finished, Date().timeIntervalSince1970 - finished > 10 { break }
                if !writer.isRunning, finished == nil { break }
                polls += 1
                try await Task.sleep(for: .milliseconds(3))
            }
            try await writer.waitForExit(timeout: .seconds(10))
            #expect(writer.status == 0, "\(writer.output)")
            #expect(d.read("db.txt") == final)
            let writerEnded = try #require(finished, "the writer did not finish: \(writer.output)")
            let arrival = try #require(arrived, "the final version did not reach the cloud within 10 s")
            #expect(polls > 0, "the writer ran too briefly to be watched (\(polls) polls)")
            let delay = arrival - writerEnded
            print("LeaseTests: final version in the cloud \(Int(delay * 1000)) ms after the writer's last append (release included; \(polls) polls of the cloud)")
            // The target is well under a second (a few ms measured when the machine is not
            // loaded). It is reported, not asserted: a loaded CI machine must not fail this
            // test, whose point is that nothing partial is ever uploaded; the loop above
            // fails it when the final version has not arrived 10 s after the release.
            try await waitForNoLeases(d)
        }
    }

    @Test func aKilledHolderLosesItsLeaseAndSyncResumes() async throws {
        try await CtlDaemon.with { d in
            try d.write("k.txt", "before")
            try await d.waitForCloud("k.txt", "before")
            let pidFile = d.root + "/child.pid"
            let holder = try d.background(["lock", "k.txt", "--", "sh", "-c", "echo $$ > '\(pidFile)'; exec sleep 60"])
            try await Polling.eventually("the command to start under the lease", timeout: .seconds(30)) {
                (try? String(contentsOfFile: pidFile, encoding: .utf8))?.isEmpty == false ? nil : "no pid file"
            }
            defer {
                if let pid = Int32((try? String(contentsOfFile: pidFile, encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines) ?? "") { kill(pid, SIGKILL) }
            }
            try await waitForLease(d, "k.txt")
            try d.write("k.txt", "changed under the lease")
            try await Task.sleep(for: .milliseconds(800))
            #expect(d.read("k.txt", side: "cloud") == "before", "the daemon synced a leased path")

            kill(holder.pid, SIGKILL)
            try await holder.waitForExit(timeout: .seconds(10))
            #expect(holder.status == 128 + SIGKILL || holder.status == SIGKILL)
            try await waitForNoLeases(d)
            try await Polling.eventually("k.txt to sync after the holder died", timeout: .seconds(30)) {
                let text = d.read("k.txt", side: "cloud")
                return text == "changed under the lease" ? nil : "cloud has \(text ?? "nothing")"
            }
        }
    }

    /// The shell sends Ctrl-C to the whole foreground group: it is for the command, and
    /// nimbusctl must outlive it to release the lease afterwards (as `system(3)` does).
    @Test func anInterruptWhileTheCommandRunsIsForTheCommand() async throws {
        try await CtlDaemon.with { d in
            try d.write("i.txt", "i")
            let holder = try d.background(["lock", "i.txt", "--", "sh", "-c", "kill -INT $PPID; kill -QUIT $PPID; sleep 0.3; exit 5"])
            try await holder.waitForExit(timeout: .seconds(10))
            #expect(holder.status == 5, "nimbusctl did not outlive an interrupt meant for its command: \(holder.status) \(holder.output)")
            try await waitForNoLeases(d)
        }
    }

    @Test func exclusiveLeasesOnOnePathTakeTurns() async throws {
        try await CtlDaemon.with { d in
            try d.write("x.txt", "x")
            let log = d.root + "/turns.log"
            // Each holder keeps its lease until the test lets it go (a stop file), however slow
            // the machine is.
            func holder(_ name: String) throws -> BackgroundProcess {
                try d.background(["lock", "x.txt", "--", "sh", "-c",
                                     "echo \(name)-start >> '\(log)'; while [ ! -e '\(d.root)/stop-\(name)' ]; do sleep 0.02; done; echo \(name)-end >> '\(log)'"])
            }
            let first = try holder("A")
            try await waitForLease(d, "x.txt")
            let second = try holder("B")
            try await waitForLease(d, "x.txt", state: "waiting")
            FileManager.default.createFile(atPath: d.root + "/stop-B", contents: nil)
            FileManager.default.createFile(atPath: d.root + "/stop-A", contents: nil)
            try await first.waitForExit(timeout: .seconds(10))
            try await second.waitForExit(timeout: .seconds(10))
            #expect(first.status == 0 && second.status == 0, "\(first.output)\n\(second.output)")
            let turns = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(turns == "A-start\nA-end\nB-start\nB-end\n", "\(turns)")
            try await waitForNoLeases(d)
        }
    }

    @Test func aSharedFolderLeaseAndAnExclusiveFileLeaseInsideExcludeEachOther() async throws {
        try await CtlDaemon.with { d in
            try d.write("F/f.txt", "f")
            // Shared on the folder held: exclusive on a file inside is busy.
            let reader = try d.background(["lock", "--shared", "F", "--", "sh", "-c",
                                              "while [ ! -e '\(d.root)/stop-reader' ]; do sleep 0.02; done"])
            try await waitForLease(d, "F")
            let busy = try await d.ctl(["lock", "--wait", "0.3", "F/f.txt", "--", "true"])
            #expect(busy.status == 1, "\(busy)")
            #expect(busy.stderr.contains("F/f.txt is busy"), "\(busy)")
            #expect(try await d.ctl(["lock", "--shared", "--wait", "0", "F/f.txt", "--", "true"]).status == 0,
                    "shared leases go together")
            FileManager.default.createFile(atPath: d.root + "/stop-reader", contents: nil)
            try await reader.waitForExit(timeout: .seconds(10))
            #expect(reader.status == 0)
            let json = try await d.ctl(["--json", "lock", "--wait", "0", "F/f.txt", "--", "true"])
            #expect(json.status == 0, "free again: \(json)")

            // Exclusive on the file held: shared on the folder is busy.
            let writer = try d.background(["lock", "F/f.txt", "--", "sh", "-c",
                                              "while [ ! -e '\(d.root)/stop-writer' ]; do sleep 0.02; done"])
            try await waitForLease(d, "F/f.txt")
            let busyJSON = try await d.ctl(["--json", "lock", "--shared", "--wait", "0.3", "F", "--", "true"])
            #expect(busyJSON.status == 1, "\(busyJSON)")
            #expect((try? busyJSON.json()["error"] as? [String: Any])?["name"] as? String == "busy", "\(busyJSON)")
            FileManager.default.createFile(atPath: d.root + "/stop-writer", contents: nil)
            try await writer.waitForExit(timeout: .seconds(10))
            #expect(try await d.ctl(["lock", "--shared", "--wait", "0", "F", "--", "true"]).status == 0)
            try await waitForNoLeases(d)
        }
    }

    @Test func lockPassesOnTheExitStatusAndReleases() async throws {
        try await CtlDaemon.with { d in
            try d.write("s.txt", "s")
            let failed = try await d.ctl(["lock", "s.txt", "--", "false"])
            #expect(failed.status == 1, "\(failed)")
            #expect(failed.stderr.isEmpty, "\(failed)")
            try await waitForNoLeases(d)
            let succeeded = try await d.ctl(["lock", "s.txt", "--", "true"])
            #expect(succeeded.status == 0, "\(succeeded)")
            let output = try await d.ctl(["lock", "s.txt", "--", "sh", "-c", "echo out; echo err >&2; exit 7"])
            #expect(output.status == 7 && output.stdout == "out\n" && output.stderr == "err\n", "\(output)")
            let signalled = try await d.ctl(["lock", "s.txt", "--", "sh", "-c", "kill -KILL $$"])
            #expect(signalled.status == 128 + SIGKILL, "\(signalled)")
            let missing = try await d.ctl(["lock", "s.txt", "--", "no-such-program-xyz"])
            #expect(missing.status == 127, "\(missing)")
            #expect(missing.stderr.contains("no-such-program-xyz: command not found"), "\(missing)")
            let usage = try await d.ctl(["lock", "s.txt", "true"])
            #expect(usage.status == 64, "\(usage)")
            try await waitForNoLeases(d)
        }
    }
}

/// The NimbusClient library's coordinated access against the real daemon.
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(2)))
struct CoordinatedAccessTests {
    @Test func coordinatedWriteReplacesWholeAndReadSeesIt() async throws {
        try await CtlDaemon.with { daemon in
            let connection = try await NimbusConnection.connect(to: .socket(daemon.socket))
            try await connection.coordinatedWrite("report.txt") { url in
                // Written in pieces; the cloud must only ever see the whole file.
                for piece in 0..<20 {
                    let handle = try FileHandle(forWritingTo: url)
                    try handle.seekToEnd()
                    try handle.write(contentsOf: Data("piece \(piece)\n".utf8))
                    try handle.close()
                }
            }
            let expected = (0..<20).map { "piece \($0)\n" }.joined()
            try await Polling.eventually("report.txt in the cloud", timeout: .seconds(10)) {
                let cloud = try? String(contentsOfFile: daemon.cloud + "/report.txt", encoding: .utf8)
                return cloud == expected ? nil : "cloud has \(cloud?.count ?? -1) bytes"
            }
            let read = try await connection.coordinatedRead("report.txt") { url in try String(contentsOf: url, encoding: .utf8) }
            #expect(read == expected)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: daemon.local).filter { $0.hasPrefix(".nimbus-tmp-") }
            #expect(leftovers.isEmpty)
            try await Polling.eventually("report.txt in sync", timeout: .seconds(10)) {
                let states = try await connection.status(of: ["report.txt"])
                return states["report.txt"]?.state == "downloaded" ? nil : "state \(String(describing: states["report.txt"]?.state))"
            }
            connection.close()
        }
    }

    @Test func aCoordinatedReadOfAPlaceholderReadsTheRealContent() async throws {
        try await CtlDaemon.with { daemon in
            let content = "the real content\n"
            try daemon.write("paper.txt", content)
            try await daemon.waitForCloud("paper.txt", content)
            let connection = try await NimbusConnection.connect(to: .socket(daemon.socket))
            try await connection.evict("paper.txt")
            #expect(!FileManager.default.fileExists(atPath: daemon.local + "/paper.txt"))
            // Named by its placeholder, as a file manager would hand it over.
            let read = try await connection.coordinatedRead("paper.txt.nimbus") { url in try String(contentsOf: url, encoding: .utf8) }
            #expect(read == content)
            #expect(!FileManager.default.fileExists(atPath: daemon.local + "/paper.txt.nimbus"))

            try await connection.evict("paper.txt")
            let fractions = Fractions()
            let entry = try await connection.download("paper.txt") { _, fraction in fractions.add(fraction) }
            #expect(entry.state == "downloaded")
            #expect(try String(contentsOfFile: daemon.local + "/paper.txt", encoding: .utf8) == content)
            #expect(fractions.all.allSatisfy { (0...1).contains($0) })
            connection.close()
        }
    }
}

/// Progress fractions seen by a callback on another task.
final class Fractions: Sendable {
    private let values = Mutex<[Double]>([])
    func add(_ value: Double) { values.withLock { $0.append(value) } }
    var all: [Double] { values.withLock { $0 } }
}
