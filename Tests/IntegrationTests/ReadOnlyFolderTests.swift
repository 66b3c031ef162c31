import Foundation
import Glibc
import NimbusTestSupport
import Testing

/// Folders without their owner's write bit (`chmod 555`, an unpacked archive, a Go module
/// cache) sync for a normal user. nimbusd runs as the user, without CAP_DAC_OVERRIDE: these
/// tests run it as nobody, on folders owned by nobody, as a systemd user service would.
/// Before, a read-only folder was made read-only on the other side before its files were
/// copied into it, and every copy (and any deletion or rename inside it) failed with EACCES
/// and was retried forever.
@Suite(.timeLimit(.minutes(3)))
struct ReadOnlyFolderTests {
    static let skipReason: String? = {
        guard geteuid() == 0 else { return "skipped: running nimbusd as an unprivileged user (nobody) needs root to switch user" }
        guard FileManager.default.isExecutableFile(atPath: RealNameSupport.setpriv) else {
            return "skipped: setpriv(1) is missing (util-linux), needed to run nimbusd as nobody"
        }
        return nil
    }()

    @Test("a read-only tree reaches the other side with its modes, and changes inside it follow",
          .enabled(if: skipReason == nil, Comment(rawValue: skipReason ?? "")), arguments: SyncDirection.allCases)
    func readOnlyTree(_ direction: SyncDirection) async throws {
        let (sandbox, daemon) = try Self.unprivilegedPair("readOnlyTree-\(direction)")
        defer { sandbox.finish() }
        let source = direction.source(daemon), target = direction.target(daemon)
        try await daemon.start()

        // Built outside the roots, given to nobody, then moved in with one rename: the daemon
        // never sees it half made. More copies than a batch (16): uploaded as a staged folder.
        let outside = try sandbox.folder("outside")
        try SyncFiles.makeDirectory(SyncFiles.join(outside, "photos"))
        try SyncFiles.makeDirectory(SyncFiles.join(outside, "photos/2019"))
        try SyncFiles.makeDirectory(SyncFiles.join(outside, "photos/2019/raw"))
        for index in 1...20 {
            try SyncFiles.write(SyncFiles.join(outside, "photos/2019/\(index).jpg"), Array("photo \(index)\n".utf8), mode: 0o444)
        }
        try SyncFiles.write(SyncFiles.join(outside, "photos/2019/raw/1.raw"), Array("raw\n".utf8), mode: 0o400)
        try Self.giveToNobody(outside + "/photos")
        try SyncFiles.setMode(SyncFiles.join(outside, "photos/2019/raw"), 0o500)
        try SyncFiles.setMode(SyncFiles.join(outside, "photos/2019"), 0o555)
        try SyncFiles.rename(SyncFiles.join(outside, "photos"), SyncFiles.join(source, "photos"))
        try await sandbox.converge("\(direction): a tree with folders 0555 and 0500", source, target, timeout: .seconds(30)) {
            try SyncExpect.all(SyncExpect.file(target, "photos/2019/raw/1.raw", "raw\n"),
                               SyncExpect.file(target, "photos/2019/20.jpg", "photo 20\n"),
                               SyncExpect.directory(target, "photos/2019", mode: 0o555),
                               SyncExpect.directory(target, "photos/2019/raw", mode: 0o500))
        }

        // A small read-only folder made while it runs: not batched, not staged.
        try SyncFiles.makeDirectory(SyncFiles.join(outside, "small"))
        try SyncFiles.write(SyncFiles.join(outside, "small/one.txt"), Array("one\n".utf8))
        try Self.giveToNobody(outside + "/small")
        try SyncFiles.setMode(SyncFiles.join(outside, "small"), 0o500)
        try SyncFiles.rename(SyncFiles.join(outside, "small"), SyncFiles.join(source, "small"))
        try await sandbox.converge("\(direction): a small folder 0500", source, target, timeout: .seconds(30)) {
            try SyncExpect.all(SyncExpect.file(target, "small/one.txt", "one\n"), SyncExpect.directory(target, "small", mode: 0o500))
        }

        try await daemon.stop()
    }

    @Test("deletions, renames and new files inside read-only folders follow, and the folders stay read-only",
          .enabled(if: skipReason == nil, Comment(rawValue: skipReason ?? "")), arguments: SyncDirection.allCases)
    func changesInsideReadOnlyFolders(_ direction: SyncDirection) async throws {
        let (sandbox, daemon) = try Self.unprivilegedPair("changesInsideReadOnlyFolders-\(direction)")
        defer { sandbox.finish() }
        let source = direction.source(daemon), target = direction.target(daemon)
        try await daemon.start()
        func path(_ relative: String) -> [UInt8] { SyncFiles.join(source, relative) }
        // Made as nobody (the daemon's user) would, synced while writable.
        try SyncFiles.makeDirectory(path("photos"))
        try SyncFiles.makeDirectory(path("photos/2019"))
        try SyncFiles.makeDirectory(path("photos/2019/raw"))
        for name in ["1.jpg", "2.jpg", "raw/3.raw"] { try SyncFiles.write(path("photos/2019/" + name), Array("\(name)\n".utf8)) }
        try Self.giveToNobody(source + "/photos")
        try await sandbox.converge("\(direction): a writable tree", source, target, timeout: .seconds(30)) {
            try SyncExpect.file(target, "photos/2019/raw/3.raw", "raw/3.raw\n")
        }

        // Made read-only after its files were synced: the modes follow.
        try SyncFiles.setMode(path("photos/2019/raw"), 0o500)
        try SyncFiles.setMode(path("photos/2019"), 0o555)
        try await sandbox.converge("\(direction): folders made read-only later", source, target, timeout: .seconds(30)) {
            try SyncExpect.all(SyncExpect.directory(target, "photos/2019", mode: 0o555), SyncExpect.directory(target, "photos/2019/raw", mode: 0o500))
        }

        // Changes inside folders that stay read-only (made here by root, which needs no write
        // bit; by their owner on another device, after lending himself the bit).
        try SyncFiles.remove(path("photos/2019/1.jpg"))
        try await sandbox.converge("\(direction): a deletion inside a read-only folder", source, target, timeout: .seconds(30)) {
            try SyncExpect.all(SyncExpect.absent(target, "photos/2019/1.jpg"), SyncExpect.directory(target, "photos/2019", mode: 0o555))
        }
        try SyncFiles.rename(path("photos/2019/2.jpg"), path("photos/2019/raw/2.jpg"))
        try await sandbox.converge("\(direction): a rename between read-only folders", source, target, timeout: .seconds(30)) {
            try SyncExpect.all(SyncExpect.file(target, "photos/2019/raw/2.jpg", "2.jpg\n"), SyncExpect.absent(target, "photos/2019/2.jpg"),
                               SyncExpect.directory(target, "photos/2019/raw", mode: 0o500))
        }
        try SyncFiles.rename(path("photos/2019/raw"), path("photos/raw"))
        try await sandbox.converge("\(direction): a read-only folder moved out of a read-only folder", source, target, timeout: .seconds(30)) {
            try SyncExpect.all(SyncExpect.file(target, "photos/raw/3.raw", "raw/3.raw\n"), SyncExpect.absent(target, "photos/2019/raw"),
                               SyncExpect.directory(target, "photos/raw", mode: 0o500))
        }
        try SyncFiles.write(path("photos/2019/new.jpg"), Array("new\n".utf8))
        try Self.giveToNobody(source + "/photos/2019/new.jpg")
        try await sandbox.converge("\(direction): a new file inside a read-only folder", source, target, timeout: .seconds(30)) {
            try SyncExpect.all(SyncExpect.file(target, "photos/2019/new.jpg", "new\n"), SyncExpect.directory(target, "photos/2019", mode: 0o555))
        }

        // The whole read-only tree removed (`rm -rf` as root).
        SyncHarness.run(SyncHarness.tool("rm"), ["-rf", source + "/photos"])
        try await sandbox.converge("\(direction): a read-only tree removed", source, target, timeout: .seconds(30)) {
            try SyncExpect.absent(target, "photos")
        }
        try await daemon.stop()
    }

    /// A read-only file (0444, the user's) gets its `user.nimbus.state` mark, read here as
    /// `getfattr -n user.nimbus.state` reads it (lgetxattr), although an unprivileged process
    /// may write a user xattr only to a file it may write: Nimbus lends the file its owner's
    /// write bit for the mark. Its mode stays 0444 on both sides, and a rescan copies nothing.
    /// Before, the mark was refused (EACCES) and the file had none.
    @Test("a read-only file gets its user.nimbus.state mark and keeps its mode on both sides",
          .enabled(if: skipReason == nil, Comment(rawValue: skipReason ?? "")), arguments: SyncDirection.allCases)
    func readOnlyFileIsMarked(_ direction: SyncDirection) async throws {
        let (sandbox, daemon) = try Self.unprivilegedPair("readOnlyFileIsMarked-\(direction)")
        defer { sandbox.finish() }
        let source = direction.source(daemon), target = direction.target(daemon)
        try await daemon.start()
        let outside = try sandbox.folder("outside")
        for (name, mode) in [("notes.txt", mode_t(0o444)), ("key.pem", mode_t(0o400))] {
            try SyncFiles.write(SyncFiles.join(outside, name), Array("\(name)\n".utf8), mode: mode)
            try Self.giveToNobody(outside + "/" + name)
            try SyncFiles.rename(SyncFiles.join(outside, name), SyncFiles.join(source, name))
        }
        func marks() -> String? {
            let states = ["notes.txt", "key.pem"].map { PlaceholderFiles.xattr(daemon.local + "/" + $0, "user.nimbus.state") }
            return states == ["downloaded", "downloaded"] ? nil : "user.nimbus.state of notes.txt and key.pem: \(states)"
        }
        try await sandbox.converge("\(direction): read-only files synced and marked", source, target, timeout: .seconds(30)) {
            try SyncExpect.all(SyncExpect.file(target, "notes.txt", "notes.txt\n"), SyncExpect.file(target, "key.pem", "key.pem\n"),
                               marks())
        }
        for root in [daemon.local, daemon.cloud] {
            #expect(try SyncExpect.all(SyncExpect.mode(root, "notes.txt", 0o444), SyncExpect.mode(root, "key.pem", 0o400)) == nil)
        }
        let copied = daemon.controlJSON(["status"]).object?["filesCopied"] as? Int
        #expect(copied == 2, "\(daemon.controlJSON(["status"]).output)")
        #expect(daemon.control(["rescan"]).status == 0)
        #expect(daemon.controlJSON(["status"]).object?["filesCopied"] as? Int == copied, "the next pass copies nothing")
        for root in [daemon.local, daemon.cloud] {
            #expect(try SyncExpect.all(SyncExpect.mode(root, "notes.txt", 0o444), SyncExpect.mode(root, "key.pem", 0o400)) == nil)
        }
        #expect(marks() == nil)
        try await daemon.stop()
        #expect(!FileManager.default.fileExists(atPath: daemon.stateDirectory + "/journal/lent-modes"), "nothing is left lent")
    }

    /// A sandbox under /var/tmp and its daemon (not started), which runs as nobody, without any
    /// capability, on folders (and a state folder and home) owned by nobody: what a systemd
    /// user service of a normal user does. Finish the sandbox in a defer.
    static func unprivilegedPair(_ label: String) throws -> (SyncSandbox, SyncDaemon) {
        let sandbox = try SyncSandbox(label, base: "/var/tmp")
        do {
            let daemon = try sandbox.daemon(device: "alpha")
            let home = sandbox.root + "/home"
            try RealNameSupport.handOver(sandbox, [daemon.local, daemon.cloud, daemon.stateDirectory, home])
            daemon.launcher = RealNameSupport.asNobody + [SyncHarness.tool("env"), "HOME=\(home)"]
            return (sandbox, daemon)
        } catch {
            sandbox.finish()
            throw error
        }
    }

    static func giveToNobody(_ path: String) throws {
        let result = SyncHarness.run(SyncHarness.tool("chown"), ["-R", "\(RealNameSupport.nobody.uid):\(RealNameSupport.nobody.gid)", path])
        guard result.status == 0 else { throw HarnessFailure("chown -R nobody \(path): \(result.output)") }
    }
}
