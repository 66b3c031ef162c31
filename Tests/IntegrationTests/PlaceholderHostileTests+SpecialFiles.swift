import Foundation
import Glibc
import Testing
import NimbusTestSupport

// Special files where a placeholder goes: a folder, a fifo, a symlink or a hard link in its place.
extension PlaceholderHostileTests {
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
