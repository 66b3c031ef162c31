import Foundation
import Glibc
import Testing
import NimbusTestSupport

// Odd names, and special files where a placeholder goes.
extension PlaceholderHostileTests {
    // MARK: Names

    @Test("a cloud file named x.nimbus appears as x.nimbus.nimbus, downloads to x.nimbus, and the cloud copy is never touched")
    func cloudFileNamedLikeAPlaceholder() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileNimbusName",
                                                                cloud: ["notes.nimbus": "my own notes, not a placeholder\n"])
        defer { s.finish() }
        let d = s.daemon
        try await d.start()
        try await d.eventually("notes.nimbus.nimbus") { PlaceholderIntegrationTests.isPlaceholder(d.local, "notes.nimbus") }
        try await d.settle()
        #expect(!PlaceholderFiles.exists(d.local + "/notes.nimbus"), "the cloud file notes.nimbus appeared under its own name before a download")
        let entry = try await d.ctlJSON(["info", "notes.nimbus"])
        #expect(entry["state"] as? String == "notDownloaded", "\(entry)")
        // What the user types: the name of the cloud file. nimbusctl must not take it for the
        // placeholder of a file "notes" that does not exist.
        let typed = try await d.ctl(["--json", "download", "notes.nimbus"])
        #expect(typed.status == 0, "nimbusctl download notes.nimbus: \(typed)")
        if typed.status != 0 {
            // Go on through the protocol, to check the daemon's part.
            let answers = try await Self.rpc(d.socketPath, [#"{"jsonrpc":"2.0","id":1,"method":"download","params":{"path":"notes.nimbus"}}"#])
            #expect(Self.outcome(answers[0]) == "ok", "\(answers[0])")
        }
        try await d.settle("after-download")
        #expect(try SyncExpect.file(d.local, "notes.nimbus", "my own notes, not a placeholder\n") == nil)
        #expect(!PlaceholderFiles.exists(d.local + "/notes.nimbus.nimbus"), "the placeholder stayed beside the downloaded notes.nimbus")
        #expect(try SyncExpect.file(d.cloud, "notes.nimbus", "my own notes, not a placeholder\n") == nil, "the cloud copy changed")
        #expect(Self.userTree(d.cloud) == ["notes.nimbus"], "cloud: \(Self.userTree(d.cloud))")
        #expect(Self.versions(d).isEmpty, "versions were made: \(Self.versions(d))")
        // The downloaded file is a file of the user's, not a placeholder: a local edit is uploaded.
        try PlaceholderFiles.write(d.local + "/notes.nimbus", Array("edited\n".utf8))
        try await d.eventually("the edit of notes.nimbus uploaded") { try SyncExpect.file(d.cloud, "notes.nimbus", "edited\n") }
        #expect(PlaceholderFiles.exists(d.cloud + "/notes") == false, "a file 'notes' appeared in the cloud")
        try await d.stop()
    }

    @Test("cloud files x and x.nimbus side by side: two placeholders, both downloadable, nothing uploaded or deleted")
    func cloudFileAndItsPlaceholderName() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileNameClash",
                                                                cloud: ["data": "the data file\n", "data.nimbus": "a file of the user's called data.nimbus\n"])
        defer { s.finish() }
        let d = s.daemon
        try await d.start()
        try await d.settle()
        try await d.settle("twice")
        #expect(PlaceholderFiles.exists(d.local + "/data.nimbus") && PlaceholderFiles.exists(d.local + "/data.nimbus.nimbus") && !PlaceholderFiles.exists(d.local + "/data"),
                "expected the placeholders data.nimbus and data.nimbus.nimbus; local: \(Self.userTree(d.local))")
        #expect(try SyncExpect.file(d.cloud, "data", "the data file\n") == nil, "the cloud copy of data changed or went")
        #expect(try SyncExpect.file(d.cloud, "data.nimbus", "a file of the user's called data.nimbus\n") == nil,
                "the cloud copy of data.nimbus was overwritten (by the placeholder of data?)")
        #expect(Self.versions(d).isEmpty, "versions were made (a cloud file was replaced or deleted): \(Self.versions(d))")
        let entries = try await d.entries()
        #expect(entries["data"]?["state"] as? String == "notDownloaded", "data: \(entries["data"] ?? [:])")
        #expect(entries["data.nimbus"]?["state"] as? String == "notDownloaded", "data.nimbus: \(entries["data.nimbus"] ?? [:])")
        try await d.stop()
    }

    @Test("a name with a newline: its placeholder is recognised, downloading it leaves the file only, nothing extra is uploaded")
    func newlineInName() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileNewline")
        defer { s.finish() }
        let d = s.daemon
        let name = "two\nlines.txt"
        try PlaceholderFiles.write(d.cloud + "/" + name, Array("content of two lines\n".utf8))
        try await d.start()
        try await d.eventually("the placeholder of the newline name") { PlaceholderIntegrationTests.isPlaceholder(d.local, name) }
        let text = PlaceholderFiles.text(d.local + "/" + name + ".nimbus") ?? ""
        #expect(text.split(separator: "\n", omittingEmptySubsequences: false).count == 7,
                "the placeholder is not 6 lines (the name's newline leaked into it):\n\(text)")
        let downloaded = try await d.ctlJSON(["download", name])
        #expect(downloaded["state"] as? String == "downloaded", "\(downloaded)")
        try await d.settle()
        #expect(Self.userTree(d.local) == [name], "local folder after the download: \(Self.userTree(d.local))")
        #expect(Self.userTree(d.cloud) == [name], "cloud folder after the download: \(Self.userTree(d.cloud))")
        try await d.stop()
    }

    /// Before, such a file was downloaded without a word in on-demand mode, whatever its size.
    @Test("a 250-byte name has no room for .nimbus: not downloaded but an error status and ls name; downloaded on request; evict refuses it with a reason")
    func nameWithoutRoomForTheSuffix() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileLongName")
        defer { s.finish() }
        let d = s.daemon
        let name = String(repeating: "n", count: 246) + ".txt"
        try PlaceholderFiles.write(d.cloud + "/" + name, Array("long name\n".utf8))
        try PlaceholderFiles.write(d.cloud + "/short.txt", Array("short\n".utf8))
        try await d.start()
        try await d.eventually("short.txt a placeholder") { PlaceholderIntegrationTests.isPlaceholder(d.local, "short.txt") }
        try await d.settle()
        #expect(Self.userTree(d.local) == ["short.txt.nimbus"], "local: \(Self.userTree(d.local))")
        let status = try await d.ctl(["status"])
        #expect(status.status == 1 && status.stdout.contains("1 file failed to sync") && status.stdout.contains(name), "\(status)")
        let failed = try await d.ctlJSON(["ls", "-r", "--state", "error"])
        #expect((failed["entries"] as? [[String: Any]])?.map { $0["path"] as? String } == [name], "\(failed)")
        let downloaded = try await d.ctlJSON(["download", name])
        #expect(downloaded["state"] as? String == "downloaded", "\(downloaded)")
        #expect(try SyncExpect.file(d.local, name, "long name\n") == nil)
        #expect(try await d.ctlJSON(["status"])["errors"] as? Int == 0)
        let evict = try await d.ctl(["--json", "evict", name])
        let state = (try? await d.ctlJSON(["info", name]))?["state"] as? String
        #expect(evict.status != 0 && (evict.stdout + evict.stderr).contains("no room") && state == "downloaded", "evict: \(evict), state \(state ?? "?")")
        #expect(try SyncExpect.file(d.cloud, name, "long name\n") == nil)
        try await d.stop()
    }

    @Test("a non-UTF-8 name gets a placeholder, downloads by pathBytes, and round-trips byte for byte")
    func nonUTF8Name() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileBytes")
        defer { s.finish() }
        let d = s.daemon
        let name: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".txt".utf8)
        try SyncFiles.write(SyncFiles.join(d.cloud, name), Array("latin-1 name\n".utf8))
        try await d.start()
        try await d.eventually("the placeholder of the latin-1 name") {
            Self.exists(d.local, name + Array(".nimbus".utf8)) ? nil : "local: \(Self.userTree(d.local))"
        }
        #expect(!Self.exists(d.local, name), "downloaded although on demand")
        let base64 = Data(name).base64EncodedString()
        let answers = try await Self.rpc(d.socketPath, [
            #"{"jsonrpc":"2.0","id":1,"method":"download","params":{"pathBytes":"\#(base64)"}}"#,
        ])
        #expect(Self.outcome(answers[0]) == "ok", "\(answers[0])")
        #expect(Self.read(d.local, name) == Array("latin-1 name\n".utf8), "the downloaded file")
        #expect(!Self.exists(d.local, name + Array(".nimbus".utf8)), "the placeholder stayed")
        try await d.settle()
        #expect(Self.userTree(d.cloud).count == 1, "cloud: \(Self.userTree(d.cloud))")
        try await d.stop()
    }

    // MARK: Special files where a placeholder goes

    @Test("a folder, a fifo and a symlink already named x.nimbus: the cloud files x stay intact and reachable, the symlink is not followed")
    func specialFilesOnPlaceholderNames() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileSpecial")
        defer { s.finish() }
        let d = s.daemon
        for name in ["dir", "fifo", "link"] { try PlaceholderFiles.write(d.cloud + "/" + name, Array("cloud \(name)\n".utf8)) }
        try FileManager.default.createDirectory(atPath: d.local + "/dir.nimbus", withIntermediateDirectories: true)
        try PlaceholderFiles.write(d.local + "/dir.nimbus/inside.txt", Array("inside\n".utf8))
        #expect(mkfifo(d.local + "/fifo.nimbus", 0o644) == 0)
        let secret = s.root + "/outside-secret.txt"
        try PlaceholderFiles.write(secret, Array("# Nimbus placeholder: outside the roots\n".utf8))
        try SyncFiles.makeSymlink(SyncFiles.join(d.local, "link.nimbus"), to: secret)
        try await d.start()
        try await d.eventually("dir.nimbus/inside.txt uploaded") { try SyncExpect.file(d.cloud, "dir.nimbus/inside.txt", "inside\n") }
        try await d.eventually("the symlink link.nimbus uploaded as a symlink") {
            try SyncExpect.symlink(d.cloud, "link.nimbus", to: secret)
        }
        try await d.settle()
        for name in ["dir", "fifo", "link"] {
            #expect(try SyncExpect.file(d.cloud, name, "cloud \(name)\n") == nil, "the cloud file \(name) changed or went")
        }
        #expect(Self.versions(d).isEmpty, "cloud files were replaced or deleted: \(Self.versions(d))")
        #expect(try PlaceholderFiles.read(secret) == Array("# Nimbus placeholder: outside the roots\n".utf8), "the file outside the roots changed")
        // dir and link have no room for a placeholder: the file itself comes (or an error says why).
        let entries = try await d.entries()
        for name in ["dir", "link", "fifo"] {
            let state = entries[name]?["state"] as? String
            let real = (try? SyncExpect.file(d.local, name, "cloud \(name)\n")) == nil
            #expect(real || state == "error",
                    "\(name): the placeholder name is taken, yet it is neither downloaded nor in error (state \(state ?? "none")); local: \(Self.userTree(d.local))")
        }
        #expect(!PlaceholderFiles.exists(d.cloud + "/fifo.nimbus"), "the fifo was uploaded")
        try await d.stop()
    }

    @Test("a placeholder replaced by a hard link to another file: that file's content is kept, no cloud file is lost")
    func placeholderReplacedByHardLink() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileHardLink", cloud: ["x.txt": "cloud x\n"])
        defer { s.finish() }
        let d = s.daemon
        try await d.start()
        try await d.eventually("x.txt placeholder") { PlaceholderIntegrationTests.isPlaceholder(d.local, "x.txt") }
        try PlaceholderFiles.write(d.local + "/mine.txt", Array("mine\n".utf8))
        try await d.eventually("mine.txt uploaded") { try SyncExpect.file(d.cloud, "mine.txt", "mine\n") }
        // ln -f mine.txt x.txt.nimbus
        let tmp = d.local + "/.hl-tmp"
        #expect(link(d.local + "/mine.txt", tmp) == 0)
        #expect(rename(tmp, d.local + "/x.txt.nimbus") == 0)
        try await d.settle()
        try await d.settle("again")
        #expect(try SyncExpect.file(d.cloud, "x.txt", "cloud x\n") == nil, "the cloud x.txt changed or went")
        #expect(try SyncExpect.file(d.cloud, "mine.txt", "mine\n") == nil, "the cloud mine.txt changed or went")
        #expect(try SyncExpect.file(d.local, "mine.txt", "mine\n") == nil, "the local mine.txt changed or went")
        // x.txt is still reachable: a placeholder again, or downloaded.
        let entry = try await d.ctlJSON(["info", "x.txt"])
        #expect(["notDownloaded", "downloaded"].contains(entry["state"] as? String ?? ""), "\(entry)")
        try await d.ctlJSON(["download", "x.txt"])
        #expect(try SyncExpect.file(d.local, "x.txt", "cloud x\n") == nil)
        #expect(try SyncExpect.file(d.local, "mine.txt", "mine\n") == nil, "the download changed mine.txt through the hard link")
        try await d.stop()
    }
}
