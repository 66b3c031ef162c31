import Foundation
import Glibc
import NimbusSystem
import NimbusTestSupport
import NimbusTestTraits
import Testing

/// Real-name placeholders through the real nimbusd (issue 16): cloud files appear under their
/// real names with their real size and no blocks, reading them gives the cloud's bytes,
/// download, evict and pin work in place, a clean stop guards them, and switching styles
/// converts both ways without downloading. The heavier cases (50 MB programs, kill -9 during a
/// fetch, indexers, the rate limit, a full disk) are in the issue's own tests.
@Suite(.serialized, .onAThreadOfItsOwn(timeLimit: .minutes(3)), .enabled(if: RealNameSupport.skipReason == nil, Comment(rawValue: RealNameSupport.skipReason ?? "")))
struct RealNamePlaceholderDaemonTests {

    static func start(_ label: String, files: [String: [UInt8]]) async throws -> PlaceholderSandbox {
        let s = try PlaceholderSandbox(label, base: RealNameSupport.base)
        s.daemon.style = "real-name"
        for (name, bytes) in files { try PlaceholderFiles.write(s.daemon.cloud + "/" + name, bytes) }
        try await s.daemon.start()
        return s
    }

    /// Bytes unlike zeros, the same for a count in every run (a failure replays as it was).
    static func random(_ count: Int) -> [UInt8] {
        var random = SeededRandom(seed: UInt64(count))
        return random.bytes(count)
    }

    static func stat(_ path: String) -> Glibc.stat? {
        var result = Glibc.stat()
        return lstat(path, &result) == 0 ? result : nil
    }

    /// Whether `relative` is a not-downloaded real-name placeholder of the cloud file: same
    /// size, mtime and mode, no blocks, the state xattr; lstat and getxattr only (no open).
    static func notDownloaded(_ d: PlaceholderDaemon, _ relative: String) -> String? {
        guard let here = stat(d.local + "/" + relative), let there = stat(d.cloud + "/" + relative) else { return "\(relative) missing" }
        if here.st_size != there.st_size { return "\(relative): size \(here.st_size), cloud \(there.st_size)" }
        if here.st_mtim.tv_sec != there.st_mtim.tv_sec || here.st_mtim.tv_nsec != there.st_mtim.tv_nsec { return "\(relative): mtime" }
        if here.st_mode != there.st_mode { return "\(relative): mode \(String(here.st_mode, radix: 8))" }
        if here.st_blocks != 0 { return "\(relative): \(here.st_blocks) blocks" }
        if PlaceholderFiles.xattr(d.local + "/" + relative, "user.nimbus.state") != "notDownloaded" { return "\(relative): state xattr" }
        if PlaceholderFiles.exists(d.local + "/" + relative + ".nimbus") { return "\(relative).nimbus exists" }
        return nil
    }

    static func run(_ command: String) -> (status: Int32, output: String) {
        SyncHarness.run(SyncHarness.tool("sh"), ["-c", command])
    }

    @Test("cloud files appear under their real names with real size, mtime and mode and no blocks; cat and cp read the cloud's bytes")
    func realNamesAndReads() async throws {
        let files = ["small.txt": Self.random(4096), "d/big.bin": Self.random(8 << 20), "empty": []]
        let s = try await Self.start("realNamesAndReads", files: files)
        defer { s.finish() }
        let d = s.daemon
        try await d.eventually("placeholders") { files.keys.sorted().compactMap { Self.notDownloaded(d, $0) }.first }
        let status = try await d.ctlJSON(["status"])
        #expect(status["placeholderStyle"] as? String == "real-name", "\(status)")
        #expect(try await d.ctlJSON(["info", "d/big.bin"])["state"] as? String == "notDownloaded")
        #expect(d.allDownloadsStarted().isEmpty, "nothing is downloaded in on-demand mode")

        let cat = Self.run("cat '\(d.local)/small.txt' | cmp - '\(d.cloud)/small.txt'")
        #expect(cat.status == 0, "cat: \(cat.output)")
        // cp looks for data with SEEK_DATA: without the open hook it would copy holes.
        let cp = Self.run("cp '\(d.local)/d/big.bin' '\(s.root)/copy' && cmp '\(s.root)/copy' '\(d.cloud)/d/big.bin'")
        #expect(cp.status == 0, "cp: \(cp.output)")
        #expect(Self.run("cat '\(d.local)/empty'").status == 0)
        try await d.eventually("the journal to say downloaded") {
            let state = try await d.ctlJSON(["info", "d/big.bin"])["state"] as? String
            return state == "downloaded" ? nil : "state \(state ?? "-")"
        }
        #expect(Self.stat(d.local + "/d/big.bin").map { $0.st_blocks > 0 } == true)
        #expect(PlaceholderFiles.xattr(d.local + "/d/big.bin", "user.nimbus.state") == "downloaded")
        // Read in place: the cloud is not written back.
        try await d.settle()
        #expect(try PlaceholderFiles.read(d.cloud + "/d/big.bin") == files["d/big.bin"])
    }

    @Test("nimbusctl download, evict (in place, then read again) and pin")
    func downloadEvictPin() async throws {
        let content = Self.random(1 << 20)
        let s = try await Self.start("downloadEvictPin", files: ["a.bin": content, "b.bin": content, "tiny": Array("hello".utf8)])
        defer { s.finish() }
        let d = s.daemon
        try await d.eventually("placeholders") { Self.notDownloaded(d, "a.bin") ?? Self.notDownloaded(d, "b.bin") }
        let downloaded = try await d.ctlJSON(["download", "a.bin"])
        #expect(downloaded["state"] as? String == "downloaded", "\(downloaded)")
        #expect(try PlaceholderFiles.read(d.local + "/a.bin") == content)
        let inode = Self.stat(d.local + "/a.bin")?.st_ino

        let evicted = try await d.ctlJSON(["evict", "a.bin"])
        #expect(evicted["state"] as? String == "notDownloaded" && evicted["residency"] as? String == "evicted", "\(evicted)")
        #expect(Self.notDownloaded(d, "a.bin") == nil)
        #expect(Self.stat(d.local + "/a.bin")?.st_ino == inode, "evicted in place")
        #expect(try PlaceholderFiles.read(d.cloud + "/a.bin") == content)
        let again = Self.run("cmp '\(d.local)/a.bin' '\(d.cloud)/a.bin'")
        #expect(again.status == 0, "read after evict: \(again.output)")

        // A file smaller than a block: its only block is freed too.
        try await d.ctlJSON(["download", "tiny"])
        try await d.ctlJSON(["evict", "tiny"])
        #expect(Self.notDownloaded(d, "tiny") == nil)

        let pinned = try await d.ctlJSON(["pin", "b.bin"])
        #expect(pinned["state"] as? String == "downloaded" && pinned["residency"] as? String == "pinned", "\(pinned)")
        #expect(try PlaceholderFiles.read(d.local + "/b.bin") == content)
        let refused = try await d.ctlError(["evict", "b.bin"])
        #expect(refused.error["name"] as? String == "pinned", "\(refused.result)")
    }

    /// Mirror mode has placeholders too: a file the user evicts stays one (and a reload may
    /// switch to on-demand mode), so the hydration server runs there as well.
    @Test("mirror mode: an evicted file is a real-name placeholder, and reading it gives the cloud's bytes")
    func mirrorModeEvictedFileIsServed() async throws {
        let content = Self.random(1 << 16)
        let s = try PlaceholderSandbox("mirrorEvict", base: RealNameSupport.base)
        defer { s.finish() }
        let d = s.daemon
        d.style = "real-name"
        d.mode = "mirror"
        try PlaceholderFiles.write(d.cloud + "/m.bin", content)
        try await d.start()
        try await d.eventually("m.bin downloaded") {
            let state = try await d.ctlJSON(["info", "m.bin"])["state"] as? String
            return state == "downloaded" ? nil : "state \(state ?? "-")"
        }
        let evicted = try await d.ctlJSON(["evict", "m.bin"])
        #expect(evicted["state"] as? String == "notDownloaded", "\(evicted)")
        #expect(Self.notDownloaded(d, "m.bin") == nil)
        let read = Self.run("cmp '\(d.local)/m.bin' '\(d.cloud)/m.bin'")
        #expect(read.status == 0, "read after evict in mirror mode: \(read.output)")
    }

    @Test("a clean stop takes the permission bits of not-downloaded files; the next start marks them and gives them back")
    func guardAcrossAStop() async throws {
        let s = try await Self.start("guardAcrossAStop", files: ["a.txt": Array("guarded\n".utf8), "b.txt": Array("read\n".utf8)])
        defer { s.finish() }
        let d = s.daemon
        try await d.eventually("placeholders") { Self.notDownloaded(d, "a.txt") ?? Self.notDownloaded(d, "b.txt") }
        let mode = Self.stat(d.cloud + "/a.txt")!.st_mode & 0o7777
        #expect(Self.run("cat '\(d.local)/b.txt'").output == "read\n")
        try await d.stop()
        #expect(Self.stat(d.local + "/a.txt").map { $0.st_mode & 0o7777 } == 0, "not-downloaded: no permission bits")
        #expect(PlaceholderFiles.xattr(d.local + "/a.txt", "user.nimbus.mode") == String(mode, radix: 8))
        #expect(Self.stat(d.local + "/b.txt").map { $0.st_mode & 0o7777 } == mode, "a downloaded file keeps its mode")
        try await d.start()
        try await d.eventually("the mode back") {
            Self.stat(d.local + "/a.txt").map { $0.st_mode & 0o7777 } == mode ? nil : "still guarded"
        }
        #expect(PlaceholderFiles.xattr(d.local + "/a.txt", "user.nimbus.mode") == nil)
        #expect(Self.run("cat '\(d.local)/a.txt'").output == "guarded\n")
        try await d.settle()
        #expect(try PlaceholderFiles.read(d.cloud + "/a.txt") == Array("guarded\n".utf8), "the guard is no change to sync")
    }

    @Test("switching style = real-name → suffix → real-name converts every placeholder, downloads nothing and changes nothing in the cloud")
    func styleSwitchBothWays() async throws {
        let files = ["a.txt": Self.random(5000), "d/b.bin": Self.random(300_000)]
        let s = try await Self.start("styleSwitchBothWays", files: files)
        defer { s.finish() }
        let d = s.daemon
        try await d.eventually("real-name placeholders") { files.keys.sorted().compactMap { Self.notDownloaded(d, $0) }.first }
        try await d.stop()
        d.style = "suffix"
        try await d.start()
        let mark = d.logMark
        try await d.eventually("suffix placeholders") {
            files.keys.sorted().first { PlaceholderFiles.exists(d.local + "/" + $0) || !PlaceholderFiles.exists(d.local + "/" + $0 + ".nimbus") }
        }
        #expect(try await d.ctlJSON(["info", "d/b.bin"])["state"] as? String == "notDownloaded")
        try await d.stop()
        d.style = "real-name"
        try await d.start()
        try await d.eventually("real-name placeholders again") { files.keys.sorted().compactMap { Self.notDownloaded(d, $0) }.first }
        #expect(d.allDownloadsStarted(since: mark).isEmpty, "a conversion downloads nothing")
        #expect(d.logLines(containing: "was opened: downloaded", since: mark).isEmpty, "nor fills anything")
        for (name, bytes) in files { #expect(try PlaceholderFiles.read(d.cloud + "/" + name) == bytes, "\(name) in the cloud") }
        let read = Self.run("cmp '\(d.local)/d/b.bin' '\(d.cloud)/d/b.bin'")
        #expect(read.status == 0, "\(read.output)")
    }
}
