import Foundation
import Glibc
import NimbusTestTraits
import Testing
import NimbusTestSupport

/// Issue 16 through the real daemon, across its life: kill -9 during a fill, a clean stop
/// and unprivileged readers, programs that overwrite or truncate a not-downloaded file.
/// (Evict and read again, and the guard's permission bits, are in RealNamePlaceholderDaemonTests.)
@Suite(.serialized, .onAThreadOfItsOwn(timeLimit: .minutes(5)),
       .enabled(if: RealNameSupport.skipReason == nil, Comment(rawValue: RealNameSupport.skipReason ?? "")))
struct RealNameLifecycleTests {

    @Test("kill -9 during a 200 MB fill, then a restart and a reader: the right bytes or an error, never a partial file")
    func killDuringFill() async throws {
        // A fast disk may finish the fill before the poll sees the target: try again, earlier.
        for attempt in 1...4 {
            if try await killDuringFill(attempt: attempt) { return }
        }
        Issue.record("every fill finished before the kill; the kill tested nothing")
    }

    /// False when the fill was complete before the kill.
    func killDuringFill(attempt: Int) async throws -> Bool {
        let s = try RealName.sandbox("realNameKill-\(attempt)")
        defer { s.finish() }
        let d = s.daemon
        let original = s.root + "/original.bin"
        try PlaceholderFiles.writeBig(original, megabytes: 200, seed: 42)
        try #require(SyncHarness.run(SyncHarness.tool("cp"), ["-p", original, d.cloud + "/big.bin"]).status == 0)
        try await d.start()
        try await d.eventually("the real-name placeholder") { RealName.isNotDownloaded(d, "big.bin") }

        let file = d.local + "/big.bin"
        let reader = try BackgroundProcess("/bin/sh", ["-c", #"cat "$1" > "$2""#, "sh", file, s.root + "/during.bin"], scratch: s.root)
        defer { reader.stop() }
        var random = SeededRandom(seed: SeededRandom.seed(for: "realNameKill"))
        let target = Int64.random(in: (1 << 20)..<(150 << 20), using: &random) >> (2 * (attempt - 1))
        var filled: Int64 = 0
        let reached = Polling.spin(timeout: .seconds(60)) {
            filled = Int64(PlaceholderFiles.status(file)?.st_blocks ?? 0) * 512
            return filled >= target || !reader.isRunning
        }
        d.freeze()  // On a fast disk the fill would end between the poll and the kill.
        try #require(reached, "the fill did not reach \(target) bytes within 60 s (\(filled) filled)")
        let midFill = reader.isRunning
        try await d.crash()
        try await reader.waitForExit(timeout: .seconds(60))
        // What the reader that was waiting got is the kernel's doing: a closing group allows the
        // opens it was holding, so it may read a partial file (README: the crash window).
        print("[realNameKill] attempt \(attempt): kill -9 at \(filled) bytes filled (target \(target)), mid-fill \(midFill); "
              + "the waiting reader exited \(reader.status) with \(PlaceholderFiles.same(s.root + "/during.bin", original) ? "the right bytes" : "other bytes")")
        guard midFill else { return false }

        try await d.start()
        try await d.eventually("big.bin whole or not downloaded again after the restart, never partial") {
            RealName.isDownloaded(d, "big.bin") == nil || RealName.isNotDownloaded(d, "big.bin") == nil
                ? nil : "\(RealName.isDownloaded(d, "big.bin") ?? ""); \(RealName.isNotDownloaded(d, "big.bin") ?? "")"
        }
        let after = RealName.shell(#"cat "$1" > "$2""#, [file, s.root + "/after.bin"])
        #expect(after.status != 0 || PlaceholderFiles.same(s.root + "/after.bin", original), "a reader after the restart got other bytes: \(after)")
        if after.status == 0 { #expect(RealName.isDownloaded(d, "big.bin") == nil, "\(RealName.isDownloaded(d, "big.bin") ?? "")") }
        #expect(PlaceholderFiles.same(d.cloud + "/big.bin", original), "the cloud copy changed")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: d.cloud + "/.nimbus/versions")) ?? []
        #expect(versions.isEmpty, "the cloud copy was replaced (versions: \(versions))")
        #expect(PlaceholderFiles.temporaryFiles(d.local).isEmpty, "\(PlaceholderFiles.temporaryFiles(d.local))")
        try await d.stop()
        return true
    }

    @Test("after a clean stop an unprivileged reader of a not-downloaded file gets an error, not zeros; after the restart, the bytes")
    func cleanStopGuardsUnprivilegedReaders() async throws {
        let s = try RealName.sandbox("realNameStop")
        defer { s.finish() }
        let d = s.daemon
        try RealNameSupport.handOver(s.sandbox, [])  // the sandbox traversable by nobody
        let content = Array(String(repeating: "not zeros ", count: 500).utf8)
        try PlaceholderFiles.write(d.cloud + "/doc.txt", content)
        chmod(d.cloud + "/doc.txt", 0o644)
        try await d.start()
        try await d.eventually("the real-name placeholder") { RealName.isNotDownloaded(d, "doc.txt") }
        let mode = try #require(PlaceholderFiles.status(d.local + "/doc.txt")).st_mode & 0o7777
        #expect(mode == 0o644, "the placeholder's mode is \(String(mode, radix: 8)), the cloud file's 644")
        try await d.stop()

        let file = d.local + "/doc.txt"
        let stopped = RealName.shell(#"cat "$1""#, [file], as: RealNameSupport.asNobody)
        #expect(stopped.status != 0, "nobody read doc.txt while no daemon listened: \(stopped.output.utf8.count) bytes")
        #expect(!stopped.output.contains("\0"), "nobody read zeros from doc.txt while no daemon listened")
        #expect(RealName.isNotDownloaded(d, "doc.txt") == nil, "\(RealName.isNotDownloaded(d, "doc.txt") ?? "")")

        try await d.start()
        let served = RealName.shell(#"cat "$1""#, [file], as: RealNameSupport.asNobody)
        #expect(served.status == 0 && served.output.utf8.elementsEqual(content), "nobody after the restart: \(served.output.prefix(200))")
        #expect(try #require(PlaceholderFiles.status(file)).st_mode & 0o7777 == mode, "the mode after the restart")
        try await d.stop()
    }

    @Test("`echo new > f` and `truncate -s 10 f` on not-downloaded files give exactly what they give on downloaded ones")
    func overwriteAndTruncateActAsOnAnyFile() async throws {
        let s = try RealName.sandbox("realNameOverwrite")
        defer { s.finish() }
        let d = s.daemon
        for name in ["echo.txt", "truncate.txt"] {
            try PlaceholderFiles.write(d.cloud + "/" + name, Array(String(repeating: "\(name) content\n", count: 300).utf8))
            try #require(SyncHarness.run(SyncHarness.tool("cp"), [d.cloud + "/" + name, s.root + "/normal-" + name]).status == 0)
        }
        try await d.start()
        try await d.eventually("the real-name placeholders") {
            RealName.isNotDownloaded(d, "echo.txt") ?? RealName.isNotDownloaded(d, "truncate.txt")
        }
        let echo = RealName.shell(#"echo new > "$1" && echo new > "$2""#, [d.local + "/echo.txt", s.root + "/normal-echo.txt"])
        #expect(echo.status == 0, "\(echo)")
        let truncate = RealName.shell(#"truncate -s 10 "$1" && truncate -s 10 "$2""#,
                                      [d.local + "/truncate.txt", s.root + "/normal-truncate.txt"])
        #expect(truncate.status == 0, "\(truncate)")
        for name in ["echo.txt", "truncate.txt"] {
            let expected = try #require(try PlaceholderFiles.read(s.root + "/normal-" + name))
            #expect(try PlaceholderFiles.read(d.local + "/" + name) == expected,
                    "\(name): \(PlaceholderFiles.text(d.local + "/" + name) ?? "unreadable"), on a normal file: \(String(decoding: expected, as: UTF8.self))")
            // A local edit like any other: the cloud gets it.
            try await d.eventually("the edited \(name) in the cloud", timeout: .seconds(30)) {
                try PlaceholderFiles.read(d.cloud + "/" + name) == expected ? nil : "\(PlaceholderFiles.text(d.cloud + "/" + name)?.prefix(40) ?? "nothing")"
            }
        }
        try await d.stop()
    }
}
