import Foundation
import Glibc
import Testing
import NimbusTestSupport

// Evict and download racing users: open files, a paused pair, a cloud file changing kind, both at once.
extension PlaceholderHostileTests {
    // MARK: Evict and download racing users

    @Test("evict of a folder with one open file among many: the others are evicted, the open one stays, the error names it")
    func evictFolderWithOneOpenFile() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileEvictFolder")
        defer { s.finish() }
        let d = s.daemon
        let names = (0..<20).map { "folder/f\($0).txt" }
        for name in names { try PlaceholderFiles.write(d.cloud + "/" + name, Array("content \(name)\n".utf8)) }
        try await d.start()
        try await d.eventually("placeholders") { names.compactMap { PlaceholderIntegrationTests.isPlaceholder(d.local, $0) }.first }
        try await d.ctlJSON(["download", "folder"])
        let reader = try BackgroundProcess(SyncHarness.tool("sleep"), ["60"], standardInput: d.local + "/folder/f7.txt", scratch: s.root)
        defer { reader.stop() }
        let refused = try await d.ctlError(["evict", "folder"])
        #expect(refused.error["name"] as? String == "in_use", "\(refused.result)")
        #expect("\(refused.error)".contains("f7.txt"), "the refusal does not name the open file: \(refused.result)")
        #expect(try SyncExpect.file(d.local, "folder/f7.txt", "content folder/f7.txt\n") == nil, "the open file was evicted")
        #expect(!PlaceholderFiles.exists(d.local + "/folder/f7.txt.nimbus"), "a placeholder beside the open file")
        for name in names where name != "folder/f7.txt" {
            #expect(PlaceholderIntegrationTests.isPlaceholder(d.local, name) == nil, "\(PlaceholderIntegrationTests.isPlaceholder(d.local, name) ?? "")")
        }
        for name in names { #expect(try SyncExpect.file(d.cloud, name, "content \(name)\n") == nil) }
        #expect(PlaceholderFiles.temporaryFiles(d.local).isEmpty, "\(PlaceholderFiles.temporaryFiles(d.local))")
        try await d.stop()
    }

    @Test("download and evict while paused answer at once with a clear 'paused' error or work; after resume the download works")
    func downloadAndEvictWhilePaused() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostilePaused", cloud: ["a.txt": "a\n", "b.txt": "b\n"])
        defer { s.finish() }
        let d = s.daemon
        try await d.start()
        try await d.eventually("placeholders") { ["a.txt", "b.txt"].compactMap { PlaceholderIntegrationTests.isPlaceholder(d.local, $0) }.first }
        try await d.ctlJSON(["download", "b.txt"])
        try await d.ctlJSON(["pause"])
        let download = try await d.ctl(["--json", "download", "a.txt"])
        if download.status != 0 {
            let name = ((try? download.json())?["error"] as? [String: Any])?["name"] as? String
            #expect(name == "paused", "a download refused while paused should say paused (the protocol has that error name): \(download)")
        } else {
            #expect(try SyncExpect.file(d.local, "a.txt", "a\n") == nil)
        }
        let evict = try await d.ctl(["--json", "evict", "b.txt"])
        if evict.status != 0 {
            let name = ((try? evict.json())?["error"] as? [String: Any])?["name"] as? String
            #expect(name == "paused", "\(evict)")
        }
        try await d.ctlJSON(["resume"])
        try await d.ctlJSON(["download", "a.txt"])
        #expect(try SyncExpect.file(d.local, "a.txt", "a\n") == nil)
        #expect(try SyncExpect.file(d.cloud, "b.txt", "b\n") == nil)
        try await d.stop()
    }

    @Test("download of a file that became a symlink, or was deleted, in the cloud: a not_found error, nothing read through the link")
    func downloadWhenTheCloudFileChangedKind() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileCloudKind")
        defer { s.finish() }
        let d = s.daemon
        let secret = s.root + "/secret.txt"
        try PlaceholderFiles.write(secret, Array("outside the roots\n".utf8))
        try PlaceholderFiles.write(d.cloud + "/link.txt", Array("soon a link\n".utf8))
        try PlaceholderFiles.write(d.cloud + "/gone.txt", Array("soon gone\n".utf8))
        try await d.start()
        try await d.eventually("placeholders") { ["link.txt", "gone.txt"].compactMap { PlaceholderIntegrationTests.isPlaceholder(d.local, $0) }.first }
        try await d.ctlJSON(["pause"])  // The daemon does not look at the cloud change before the download.
        try SyncFiles.remove(SyncFiles.join(d.cloud, "link.txt"))
        try SyncFiles.makeSymlink(SyncFiles.join(d.cloud, "link.txt"), to: secret)
        try SyncFiles.remove(SyncFiles.join(d.cloud, "gone.txt"))
        try await d.ctlJSON(["resume"])
        for name in ["link.txt", "gone.txt"] {
            let result = try await d.ctl(["--json", "download", name])
            if result.status == 0 {
                let isRegular = PlaceholderFiles.status(d.local + "/" + name).map { $0.st_mode & S_IFMT == S_IFREG } ?? false
                #expect(!isRegular, "\(name) was downloaded as a regular file: the cloud symlink was followed? \(result)")
            } else {
                let error = (try? result.json())?["error"] as? [String: Any]
                #expect(error?["name"] as? String == "not_found", "\(name): \(result)")
            }
        }
        try await d.eventually("link.txt a symlink locally, gone.txt gone") {
            let link = try SyncExpect.symlink(d.local, "link.txt", to: secret)
            let gone = PlaceholderFiles.exists(d.local + "/gone.txt") || PlaceholderFiles.exists(d.local + "/gone.txt.nimbus") ? "gone.txt is still here" : nil
            let stale = PlaceholderFiles.exists(d.local + "/link.txt.nimbus") ? "link.txt.nimbus is still here" : nil
            return link ?? gone ?? stale
        }
        #expect(try PlaceholderFiles.read(secret) == Array("outside the roots\n".utf8))
        try await d.stop()
    }

    @Test("evict and download of one path, 10 times each at once: always the placeholder or the file, never both or neither")
    func concurrentEvictAndDownload() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileEvictRace")
        defer { s.finish() }
        let d = s.daemon
        try PlaceholderFiles.writeBig(d.cloud + "/race.bin", megabytes: 2, seed: 11)
        try await d.start()
        try await d.eventually("placeholder") { PlaceholderIntegrationTests.isPlaceholder(d.local, "race.bin") }
        let socket = d.socketPath, environment = d.environment, scratch = s.root
        try await withThrowingTaskGroup(of: CtlResult.self) { group in
            for i in 0..<20 {
                let arguments = ["--socket", socket, "--json", i % 2 == 0 ? "download" : "evict", "race.bin"]
                group.addTask {
                    try await Polling.blocking {
                        try CtlHarness.run(SyncHarness.nimbusctl, arguments, environment: environment, currentDirectory: scratch, scratch: scratch)
                    }
                }
            }
            for try await result in group {
                let error = ((try? result.json())?["error"] as? [String: Any])?["name"] as? String
                #expect(result.status == 0 || ["busy", "not_in_sync", "in_use"].contains(error ?? ""), "\(result)")
            }
        }
        let file = PlaceholderFiles.exists(d.local + "/race.bin"), placeholder = PlaceholderFiles.exists(d.local + "/race.bin.nimbus")
        #expect(file != placeholder, "file: \(file), placeholder: \(placeholder)")
        if file { #expect(PlaceholderFiles.same(d.local + "/race.bin", d.cloud + "/race.bin"), "the local file is not the cloud copy") }
        #expect(PlaceholderFiles.temporaryFiles(d.local).isEmpty, "\(PlaceholderFiles.temporaryFiles(d.local))")
        try await d.settle()
        #expect(Self.versions(d).isEmpty, "the cloud copy was replaced: \(Self.versions(d))")
        let entry = try await d.ctlJSON(["info", "race.bin"])
        #expect(entry["state"] as? String == (file ? "downloaded" : "notDownloaded"), "\(entry)")
        try await d.stop()
    }
}
