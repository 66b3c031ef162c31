import Foundation
import Glibc
import Testing
import NimbusTestSupport

/// Changes to placeholders from either side (issue #5): a cloud change during a download or to a
/// placeholder, and renames, moves and deletions of placeholders in the local folder.
extension PlaceholderIntegrationTests {
    @Test("a cloud change during a download restarts it: the local file is the new version, whole")
    func cloudChangeDuringDownload() async throws {
        let s = try PlaceholderSandbox("changeDuringDownload")
        defer { s.finish() }
        let d = s.daemon
        d.config = ["placeholders": ["hydrate-on-open": "false"]]
        try PlaceholderFiles.writeBig(d.cloud + "/big.bin", megabytes: 150, seed: 77)
        try await d.start()
        try await d.eventually("the placeholder") { Self.isPlaceholder(d.local, "big.bin") }
        let request = try BackgroundProcess(SyncHarness.nimbusctl, ["--socket", d.socketPath, "--json", "download", "big.bin"],
                                             environment: d.environment, scratch: s.root)
        defer { request.stop() }
        // Watched and changed from a thread of its own: a test task waits for the pool between
        // two polls, and while other suites kept the pool busy that wait outlasted the copy
        // ("nothing was tested", in a full run).
        let (local, cloudFile) = (d.local, d.cloud + "/big.bin")
        let changedMidCopy = try await Polling.blocking { () throws -> Bool in
            guard Polling.spin(timeout: .seconds(20), interval: .milliseconds(1), until: {
                !PlaceholderFiles.temporaryFiles(local).isEmpty || !request.isRunning
            }) else { throw HarnessFailure("the copy did not start within 20 s: no temporary file in \(local)") }
            let running = request.isRunning
            // Rewritten in place, 16 bytes near the start (already copied by now).
            let fd = open(cloudFile, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { throw HarnessFailure("cannot open \(cloudFile): \(String(cString: strerror(errno)))") }
            let patch = Array("CHANGED IN CLOUD".utf8)
            _ = patch.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 1000) }
            close(fd)
            return running
        }
        try await request.waitForExit(timeout: .seconds(60))
        #expect(changedMidCopy, "the download finished before the cloud change; nothing was tested")
        #expect(request.status == 0, "\(request.output)")
        #expect(PlaceholderFiles.same(d.local + "/big.bin", d.cloud + "/big.bin"), "the local file is not the new cloud version")
        #expect(!PlaceholderFiles.exists(d.local + "/big.bin.nimbus") && PlaceholderFiles.temporaryFiles(d.local).isEmpty)
        if changedMidCopy {
            #expect(d.downloadsStarted("big.bin") == 2, "the download was not restarted: \(d.logLines(containing: "big.bin"))")
        }
        try await d.stop()
    }

    @Test("renaming, moving or deleting placeholders renames, moves or deletes the cloud files, without downloading them")
    func localRenameAndDeletePropagate() async throws {
        let s = try PlaceholderSandbox("placeholderRenameDelete")
        defer { s.finish() }
        let d = s.daemon
        // Several of each, as a user would do them (mkdir then mv into it, at shell speed):
        // renames in place, moves into a folder made just before, a deletion.
        let count = 6
        var files: [String: String] = ["gone.txt": "to be deleted\n", "dir1/d.txt": "delta\n"]
        for i in 0..<count {
            files["r\(i).txt"] = "renamed in place \(i)\n"
            files["dir1/m\(i).txt"] = "moved to a new folder \(i)\n"
        }
        for (path, content) in files { try PlaceholderFiles.write(d.cloud + "/" + path, Array(content.utf8)) }
        // And 1 000 more, so that the daemon is still busy with the placeholders it just made
        // when the user starts renaming (as after the first start on a big cloud folder).
        for i in 0..<1000 { try PlaceholderFiles.write(d.cloud + "/other/f\(i).txt", Array("\(i)\n".utf8)) }
        try await d.start()
        try await d.eventually("placeholders") { files.keys.compactMap { Self.isPlaceholder(d.local, $0) }.first }
        let L = { (path: String) in Array((d.local + "/" + path).utf8) }

        var expected: [String: String] = ["dir1/d.txt": "delta\n"]
        for i in 0..<count {
            try SyncFiles.rename(L("r\(i).txt.nimbus"), L("r\(i)-renamed.txt.nimbus"))
            expected["r\(i)-renamed.txt"] = files["r\(i).txt"]
            try SyncFiles.makeDirectory(L("new\(i)"))
            try SyncFiles.rename(L("dir1/m\(i).txt.nimbus"), L("new\(i)/m\(i).txt.nimbus"))
            expected["new\(i)/m\(i).txt"] = files["dir1/m\(i).txt"]
        }
        try SyncFiles.remove(L("gone.txt.nimbus"))
        let gone = ["gone.txt"] + (0..<count).flatMap { ["r\($0).txt", "dir1/m\($0).txt"] }
        /// What is wrong in the cloud and in the local folder (nil when all is as expected).
        func check() throws -> String? {
            var problems: [String] = []
            for (path, content) in expected.sorted(by: { $0.key < $1.key }) {
                if let problem = try SyncExpect.file(d.cloud, path, content) { problems.append(problem) }
                if let problem = Self.isPlaceholder(d.local, path) { problems.append("local: " + problem) }
            }
            for path in gone {
                if let problem = try SyncExpect.absent(d.cloud, path) { problems.append(problem) }
            }
            return problems.isEmpty ? nil : "\(problems.count) problems: " + problems.joined(separator: "; ")
        }
        do {
            // They are handled once the pass over the 1 000 new placeholders ends, which took
            // more than 6 s in a debug build on two loaded cores: a deadline, not a speed check.
            try await d.eventually("the renames, moves and the deletion reach the cloud", timeout: .seconds(60)) { try check() }
        } catch {
            // Say what became of the files that went missing: kept only in the versions store?
            let versions = (try? FileManager.default.subpathsOfDirectory(atPath: d.cloud + "/.nimbus/versions")) ?? []
            Issue.record("\(error)\nin .nimbus/versions: \(versions.sorted())\nlocal folder: \(((try? FileManager.default.subpathsOfDirectory(atPath: d.local)) ?? []).sorted())")
            try await d.stop()
            return
        }
        try SyncFiles.rename(L("dir1"), L("folder"))
        try await d.eventually("the folder rename reaches the cloud") {
            try SyncExpect.all(SyncExpect.file(d.cloud, "folder/d.txt", "delta\n"), SyncExpect.absent(d.cloud, "dir1"))
        }
        try await d.settle()
        for path in expected.keys.filter({ !$0.hasPrefix("dir1/") }) + ["folder/d.txt"] {
            #expect(Self.isPlaceholder(d.local, path) == nil, "\(Self.isPlaceholder(d.local, path) ?? "")")
            #expect(PlaceholderFiles.xattr(d.local + "/" + path + ".nimbus", "user.nimbus.state") == "notDownloaded", "\(path).nimbus")
        }
        #expect(!PlaceholderFiles.exists(d.local + "/gone.txt") && !PlaceholderFiles.exists(d.local + "/gone.txt.nimbus"), "gone.txt came back")
        #expect(d.allDownloadsStarted().isEmpty, "downloads: \(d.allDownloadsStarted())")
        // The deleted file is kept in the versions store.
        let versions = d.cloud + "/.nimbus/versions/gone.txt"
        let kept = ((try? FileManager.default.contentsOfDirectory(atPath: versions)) ?? []).compactMap { PlaceholderFiles.text(versions + "/" + $0) }
        #expect(kept.contains("to be deleted\n"), "the deleted gone.txt is not in \(versions): \(kept)")
        let entries = try await d.entries()
        #expect(entries["r0-renamed.txt"]?["state"] as? String == "notDownloaded" && entries["r0.txt"] == nil && entries["gone.txt"] == nil,
                "\(entries.keys.sorted())")
        // A renamed placeholder still downloads the right content.
        try await d.ctlJSON(["download", "r0-renamed.txt"])
        #expect(Self.isDownloaded(d, "r0-renamed.txt") == nil, "\(Self.isDownloaded(d, "r0-renamed.txt") ?? "")")
        try await d.stop()
    }

    @Test("a cloud change to a file that is only a placeholder rewrites the placeholder and downloads nothing")
    func cloudChangeRewritesThePlaceholder() async throws {
        let s = try PlaceholderSandbox("cloudChange")
        defer { s.finish() }
        let d = s.daemon
        try PlaceholderFiles.write(d.cloud + "/x.txt", Array("short\n".utf8))
        try PlaceholderFiles.write(d.cloud + "/gone.txt", Array("to be deleted\n".utf8))
        try await d.start()
        try await d.eventually("placeholders") { Self.isPlaceholder(d.local, "x.txt") ?? Self.isPlaceholder(d.local, "gone.txt") }
        let placeholder = d.local + "/x.txt.nimbus"

        var random = SeededRandom(seed: 3)
        let longer = random.bytes(5000)
        try PlaceholderFiles.write(d.cloud + "/x.txt", longer)
        try PlaceholderFiles.setMtime(d.cloud + "/x.txt", 1_760_000_000_500_000_000)
        // Watched with lstat and getxattr only: reading the placeholder would download it
        // (hydrate-on-open is on, as by default, so that the daemon's own reads would show).
        try await d.eventually("the placeholder of x.txt has the new size and mtime") {
            PlaceholderFiles.xattr(placeholder, "user.nimbus.size") == "5000" && PlaceholderFiles.mtime(placeholder) == 1_760_000_000_500_000_000
                ? nil : "user.nimbus.size \(PlaceholderFiles.xattr(placeholder, "user.nimbus.size") ?? "none"), mtime \(PlaceholderFiles.mtime(placeholder) ?? -1)"
        }
        #expect(PlaceholderFiles.xattr(placeholder, "user.nimbus.state") == "notDownloaded")
        // A new cloud file while running, and a deletion in the cloud.
        try PlaceholderFiles.write(d.cloud + "/new/y.txt", Array("new\n".utf8))
        try SyncFiles.remove(Array((d.cloud + "/gone.txt").utf8))
        try await d.eventually("a placeholder for the new file, none for the deleted one") {
            SyncExpect.all(Self.isPlaceholder(d.local, "new/y.txt"),
                           PlaceholderFiles.exists(d.local + "/gone.txt.nimbus") ? "gone.txt.nimbus is still there" : nil)
        }
        try await d.settle()
        #expect(!PlaceholderFiles.exists(d.local + "/x.txt"), "x.txt was downloaded")
        #expect(d.allDownloadsStarted().isEmpty, "downloads: \(d.allDownloadsStarted())")
        #expect(try PlaceholderFiles.read(d.cloud + "/x.txt") == longer, "the cloud copy changed")
        let entries = try await d.entries()
        #expect(entries["x.txt"]?["state"] as? String == "notDownloaded" && entries["x.txt"]?["size"] as? Int == 5000,
                "\(entries["x.txt"] ?? [:])")
        // Now read it (which downloads it): the text was rewritten too.
        let text = PlaceholderFiles.text(placeholder) ?? ""
        let values = PlaceholderFiles.parse(text).values
        #expect(values["size"] == "5000" && values["mtime"].flatMap(PlaceholderFiles.parseRFC3339) == 1_760_000_000_500_000_000,
                "the placeholder text was not rewritten:\n\(text)")
        try await d.eventually("x.txt downloaded after its rewritten placeholder was opened") { Self.isDownloaded(d, "x.txt") }
        try await d.stop()
    }
}
