import Foundation
import Glibc
import Testing
import NimbusTestSupport

/// Placeholders under pressure (issue #5): a small disk and a storm of opens. Kill -9 during a
/// download is in `PlaceholderKillTests.swift`, changes from either side in
/// `PlaceholderRenameAndChangeTests.swift`: names that keep these tests in their place in the
/// serialized suite's order (see `PlaceholderTests.swift`).
extension PlaceholderIntegrationTests {
    @Test("a download that would break min-free-space is refused with a clear error and the state error (a 64 MiB tmpfs)",
          .enabled(if: geteuid() == 0, "skipped: mounting the test's tmpfs needs root"))
    func minFreeSpaceIsKept() async throws {
        let s = try PlaceholderSandbox("minFreeSpace", local: "local-on-tmpfs")
        defer { s.finish() }
        // The local folder is a 64 MiB tmpfs, mounted by the test (root with CAP_SYS_ADMIN).
        if let problem = try s.sandbox.mountTmpfs("local-on-tmpfs", size: "64m") {
            print("[minFreeSpace] SKIPPED, not run: \(problem)")
            return
        }
        let d = s.daemon
        // Automatic downloads (opening a placeholder) keep 32 MiB free; a person's request may
        // go down to the hard reserve of 16 MiB, never below.
        d.config = ["cache": ["min-free-space": "32M"]]
        try PlaceholderFiles.writeBig(d.cloud + "/small.bin", megabytes: 4, seed: 1)
        try PlaceholderFiles.writeBig(d.cloud + "/mid.bin", megabytes: 40, seed: 2)
        try PlaceholderFiles.writeBig(d.cloud + "/huge.bin", megabytes: 56, seed: 3)
        try await d.start()
        try await d.eventually("placeholders") { ["small.bin", "mid.bin", "huge.bin"].compactMap { Self.isPlaceholder(d.local, $0) }.first }

        // small.bin (4 MiB) leaves about 60 MiB: opening it downloads it.
        #expect(PlaceholderFiles.touchByOpening(d.local + "/small.bin.nimbus"))
        try await d.eventually("small.bin downloaded on open") { Self.isDownloaded(d, "small.bin") }

        // mid.bin (40 MiB) would leave about 20 MiB < min-free-space: opening it is refused.
        var mark = d.logMark
        #expect(PlaceholderFiles.touchByOpening(d.local + "/mid.bin.nimbus"))
        try await d.eventually("a log line saying why mid.bin is not downloaded") {
            d.logLines(containing: "mid.bin", since: mark).contains { $0.contains("space") } ? nil : "not yet"
        }
        try await d.settle("after-mid")
        #expect(Self.isPlaceholder(d.local, "mid.bin") == nil, "mid.bin was downloaded on open below min-free-space")
        #expect(d.downloadsStarted("mid.bin") == 0, "a copy of mid.bin started: \(d.logLines(containing: "downloading mid.bin ("))")
        let refusal = d.logLines(containing: "mid.bin", since: mark).joined(separator: "\n")
        #expect(refusal.contains("space") && refusal.contains("min-free-space"), "the refusal does not say why: \(refusal)")
        let midInfo = try await d.ctlJSON(["info", "mid.bin"])
        #expect(midInfo["state"] as? String == "error", "mid.bin after the refused download on open: \(midInfo)")

        // huge.bin (56 MiB) would leave about 4 MiB: refused even when asked for.
        let free = FreeSpace.bytes(at: d.local)
        mark = d.logMark
        let refused = try await d.ctlError(["download", "huge.bin"])
        #expect(refused.error["name"] as? String == "no_space", "\(refused.result)")
        let message = "\(refused.error["message"] ?? "") \(refused.error["reason"] ?? "")"
        #expect(message.contains("space") && message.contains("huge.bin"), "the error is not clear: \(refused.result)")
        let plain = try await d.ctl(["download", "huge.bin"])
        #expect(plain.status == 1 && plain.stderr.contains("space"), "without --json: \(plain)")
        let hugeInfo = try await d.ctlJSON(["info", "huge.bin"])
        #expect(hugeInfo["state"] as? String == "error", "huge.bin after the refused download: \(hugeInfo)")
        #expect(((hugeInfo["message"] as? String) ?? "").contains("space"), "the state error does not say why: \(hugeInfo)")
        #expect(Self.isPlaceholder(d.local, "huge.bin") == nil, "\(Self.isPlaceholder(d.local, "huge.bin") ?? "")")
        #expect(d.downloadsStarted("huge.bin") == 0, "a copy of huge.bin started")
        #expect(PlaceholderFiles.temporaryFiles(d.local).isEmpty, "temporary files: \(PlaceholderFiles.temporaryFiles(d.local))")
        #expect(FreeSpace.bytes(at: d.local) >= free - (64 << 10), "free space went from \(free) to \(FreeSpace.bytes(at: d.local))")

        // mid.bin asked for explicitly may go below min-free-space (to about 20 MiB free).
        let mid = try await d.ctlJSON(["download", "mid.bin"])
        #expect(mid["state"] as? String == "downloaded", "\(mid)")
        #expect(Self.isDownloaded(d, "mid.bin") == nil, "\(Self.isDownloaded(d, "mid.bin") ?? "")")
        #expect(FreeSpace.bytes(at: d.local) >= 16 << 20, "the explicit download went below the hard reserve: \(FreeSpace.bytes(at: d.local)) free")
        #expect(Self.isPlaceholder(d.local, "huge.bin") == nil, "\(Self.isPlaceholder(d.local, "huge.bin") ?? "")")
        try await d.stop()
    }

    @Test("1 000 placeholder opens in about a second download at most open-rate-limit files, with one warning")
    func openStormIsRateLimited() async throws {
        let s = try PlaceholderSandbox("openStorm")
        defer { s.finish() }
        let d = s.daemon
        let limit = 5
        d.config = ["placeholders": ["open-rate-limit": "\(limit)"]]
        let count = 200
        for i in 0..<count { try PlaceholderFiles.write(d.cloud + "/tree/d\(i % 10)/file\(i).txt", Array("file \(i)\n".utf8)) }
        try await d.start()
        try await d.eventually("placeholders") { (0..<count).compactMap { Self.isPlaceholder(d.local, "tree/d\($0 % 10)/file\($0).txt") }.first }

        // 5 rounds over the 200 placeholders, as fast as this process can open them (a grep -r).
        let mark = d.logMark
        let started = ContinuousClock.now
        var opens = 0
        for _ in 0..<5 {
            for i in 0..<count where PlaceholderFiles.touchByOpening(d.local + "/tree/d\(i % 10)/file\(i).txt.nimbus") { opens += 1 }
        }
        let took = ContinuousClock.now - started
        print("[openStorm] \(opens) opens of placeholders in \(took)")
        #expect(opens >= 1000 - limit * 5, "only \(opens) opens succeeded")
        // Once the daemon handled every open (a marker after them reached the cloud), the
        // downloads it admitted are known ("was opened: downloading"); wait for them to end.
        try await d.settle("storm")
        let admitted = d.logLines(containing: "was opened: downloading", since: mark).count
        try await d.eventually("the \(admitted) downloads admitted during the storm to finish") {
            let started = d.allDownloadsStarted(since: mark).count
            let done = (0..<count).count { Self.isDownloaded(d, "tree/d\($0 % 10)/file\($0).txt") == nil }
            return started == admitted && done == admitted && PlaceholderFiles.temporaryFiles(d.local).isEmpty
                ? nil : "\(admitted) admitted, \(started) started, \(done) complete"
        }
        let downloads = d.allDownloadsStarted(since: mark)
        #expect(downloads.count <= limit, "\(downloads.count) downloads for open-rate-limit = \(limit):\n\(downloads.joined(separator: "\n"))")
        #expect(downloads.count >= 1, "no placeholder was downloaded on open")
        let downloaded = (0..<count).count { !PlaceholderFiles.exists(d.local + "/tree/d\($0 % 10)/file\($0).txt.nimbus") }
        #expect(downloaded == downloads.count, "\(downloaded) placeholders gone for \(downloads.count) downloads")
        let warnings = d.logLines(containing: "open-rate-limit", since: mark)
        #expect(warnings.count == 1, "the storm should be logged once, got \(warnings.count) lines:\n\(warnings.prefix(5).joined(separator: "\n"))")
        #expect(warnings.allSatisfy { $0.contains("warning") || $0.contains("refused") }, "\(warnings)")
        try await d.stop()
    }
}
