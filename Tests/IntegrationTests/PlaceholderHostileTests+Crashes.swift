import Foundation
import Glibc
import Testing
import NimbusTestSupport

// Crashes and full disks: kill -9 inside evict, no inodes left for placeholders.
extension PlaceholderHostileTests {
    @Test("kill -9 inside evict, after the placeholder is written and the file moved aside: the cloud file is not deleted")
    func crashInsideEvict() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileEvictCrash", cloud: ["keep.txt": "precious\n"])
        defer { s.finish() }
        let d = s.daemon
        try await d.start()
        try await d.eventually("placeholder") { PlaceholderIntegrationTests.isPlaceholder(d.local, "keep.txt") }
        try await d.ctlJSON(["download", "keep.txt"])
        try await d.ctlJSON(["evict", "keep.txt"])
        let placeholder = try #require(try PlaceholderFiles.read(d.local + "/keep.txt.nimbus"))
        let mtime = try #require(PlaceholderFiles.mtime(d.local + "/keep.txt.nimbus"))
        try await d.ctlJSON(["download", "keep.txt"])
        try await d.crash()
        // What evictFile leaves when killed between removeUnchanged's rename and unlink:
        // the placeholder installed, the real file renamed to a temporary name, the journal
        // still saying "downloaded".
        try PlaceholderFiles.write(d.local + "/keep.txt.nimbus", placeholder)
        try PlaceholderFiles.setMtime(d.local + "/keep.txt.nimbus", mtime)
        try SyncFiles.rename(SyncFiles.join(d.local, "keep.txt"), SyncFiles.join(d.local, ".nimbus-tmp-evict-keep.txt"))
        try await d.start()
        try await d.settle()
        #expect(try SyncExpect.file(d.cloud, "keep.txt", "precious\n") == nil, "the cloud keep.txt was deleted after a crash inside evict")
        let entry = try? await d.ctlJSON(["info", "keep.txt"])
        #expect(["notDownloaded", "downloaded"].contains(entry?["state"] as? String ?? ""), "\(entry ?? [:])")
        let resident = try SyncExpect.file(d.local, "keep.txt", "precious\n") == nil
        #expect(PlaceholderIntegrationTests.isPlaceholder(d.local, "keep.txt") == nil || resident, "local: \(Self.userTree(d.local))")
        try await d.stop()
    }

    @Test("no inodes left for placeholders (a tmpfs with nr_inodes): nothing in the cloud changes, and all appear once there is room",
          .enabled(if: geteuid() == 0, "skipped: mounting the test's tmpfs needs root"))
    func placeholdersOnAFullDisk() async throws {
        let s = try PlaceholderSandbox("hostileNoInodes", local: "local-on-tmpfs")
        defer { s.finish() }
        if let problem = try s.sandbox.mountTmpfs("local-on-tmpfs", size: "8m,nr_inodes=48") {
            Issue.record("not run: \(problem)")
            return
        }
        let d = s.daemon
        d.config = ["placeholders": ["hydrate-on-open": "false"]]
        let names = (0..<120).map { "f\($0).txt" }
        for name in names { try PlaceholderFiles.write(d.cloud + "/" + name, Array("content of \(name)\n".utf8)) }
        try await d.start()
        try await d.eventually("the disk to fill up with placeholders") {
            d.logLines(containing: "disk is full").isEmpty ? "no ENOSPC in the log yet" : nil
        }
        #expect(d.isRunning, "nimbusd died on a full disk: \(d.exitDescription)")
        for name in names { #expect(try SyncExpect.file(d.cloud, name, "content of \(name)\n") == nil, "cloud \(name)") }
        #expect(Self.versions(d).isEmpty, "cloud files were replaced or deleted: \(Self.versions(d))")
        let remount = SyncHarness.run(SyncHarness.tool("mount"), ["-o", "remount,nr_inodes=4096", d.local])
        try #require(remount.status == 0, "\(remount.output)")
        try await d.eventually("every placeholder once there is room", timeout: .seconds(8)) {
            let missing = names.filter { PlaceholderIntegrationTests.isPlaceholder(d.local, $0) != nil }
            return missing.isEmpty ? nil : "\(missing.count) missing, e.g. \(missing.prefix(3))"
        }
        for name in names { #expect(try SyncExpect.file(d.cloud, name, "content of \(name)\n") == nil, "cloud \(name)") }
        #expect(Self.versions(d).isEmpty, "cloud files were replaced or deleted: \(Self.versions(d))")
        #expect(PlaceholderFiles.temporaryFiles(d.local).isEmpty, "\(PlaceholderFiles.temporaryFiles(d.local))")
        try await d.stop()
    }
}
