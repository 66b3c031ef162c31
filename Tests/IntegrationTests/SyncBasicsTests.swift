import Glibc
import NimbusTestTraits
import Testing

/// The real `nimbusd` on real folders: every kind of change, in each direction, while it runs
/// and while it is stopped; editors' save-by-rename; renames that must not copy.
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(3)))
struct SyncBasicsTests {

    @Test("each kind of change reaches the other side while the daemon runs", arguments: SyncDirection.allCases)
    func everyKindOfChange(_ direction: SyncDirection) async throws {
        let sandbox = try SyncSandbox("everyKindOfChange-\(direction)")
        defer { sandbox.finish() }
        let outside = try sandbox.folder("outside")
        try SyncFiles.write(SyncFiles.join(outside, "secret.txt"), Array("outside the roots\n".utf8))
        let daemon = try sandbox.daemon(device: "alpha")
        try await daemon.start()
        let src = direction.source(daemon), dst = direction.target(daemon)
        func path(_ root: String, _ relative: String) -> [UInt8] { SyncFiles.join(root, relative) }
        func step(_ name: String, _ change: () throws -> Void, until check: () throws -> String?) async throws {
            try change()
            try await sandbox.converge("\(direction): \(name)", src, dst, check)
        }

        try await step("create") { try SyncFiles.write(path(src, "a.txt"), Array("hello\n".utf8)) }
            until: { try SyncExpect.file(dst, "a.txt", "hello\n") }
        try await step("modify (same size)") { try SyncFiles.write(path(src, "a.txt"), Array("HELLO\n".utf8)) }
            until: { try SyncExpect.file(dst, "a.txt", "HELLO\n") }
        try await step("modify (shorter)") { try SyncFiles.write(path(src, "a.txt"), Array("bye\n".utf8)) }
            until: { try SyncExpect.file(dst, "a.txt", "bye\n") }
        try await step("append") { try SyncFiles.append(path(src, "a.txt"), Array("and more\n".utf8)) }
            until: { try SyncExpect.file(dst, "a.txt", "bye\nand more\n") }
        try await step("chmod a file") { try SyncFiles.setMode(path(src, "a.txt"), 0o750) }
            until: { try SyncExpect.mode(dst, "a.txt", 0o750) }
        try await step("mkdir") { try SyncFiles.makeDirectory(path(src, "dir")) }
            until: { try SyncExpect.directory(dst, "dir") }
        try await step("create in a new directory") {
            try SyncFiles.makeDirectory(path(src, "dir/sub"), mode: 0o700)
            try SyncFiles.write(path(src, "dir/sub/inner.txt"), Array("inner\n".utf8), mode: 0o600)
        } until: { try SyncExpect.all(SyncExpect.file(dst, "dir/sub/inner.txt", "inner\n"), SyncExpect.directory(dst, "dir/sub", mode: 0o700)) }

        let inodeBefore = try SyncFiles.inode(path(dst, "a.txt"))
        try await step("rename a file") { try SyncFiles.rename(path(src, "a.txt"), path(src, "b.txt")) }
            until: { try SyncExpect.all(SyncExpect.file(dst, "b.txt", "bye\nand more\n"), SyncExpect.absent(dst, "a.txt")) }
        let inodeAfter = try SyncFiles.inode(path(dst, "b.txt"))
        #expect(inodeBefore == inodeAfter, "the rename of a.txt to b.txt was not propagated as a rename: inode \(inodeBefore ?? 0) became \(inodeAfter ?? 0) in \(dst)")

        try await step("rename a directory") { try SyncFiles.rename(path(src, "dir"), path(src, "folder")) }
            until: { try SyncExpect.all(SyncExpect.file(dst, "folder/sub/inner.txt", "inner\n"), SyncExpect.absent(dst, "dir")) }
        try await step("chmod a directory") { try SyncFiles.setMode(path(src, "folder"), 0o711) }
            until: { try SyncExpect.directory(dst, "folder", mode: 0o711) }
        try await step("symlink inside the root") { try SyncFiles.makeSymlink(path(src, "link"), to: "b.txt") }
            until: { try SyncExpect.symlink(dst, "link", to: "b.txt") }
        try await step("symlinks pointing outside the root") {
            try SyncFiles.makeSymlink(path(src, "escape-file"), to: "../outside/secret.txt")
            try SyncFiles.makeSymlink(path(src, "escape-dir"), to: outside)
        } until: { try SyncExpect.all(SyncExpect.symlink(dst, "escape-file", to: "../outside/secret.txt"), SyncExpect.symlink(dst, "escape-dir", to: outside)) }
        // Never followed: nothing of the outside folder was copied anywhere.
        for root in [src, dst] {
            let tree = try SyncTree(scanning: root, includeNimbusOwn: true)
            let leaked = tree.entries.filter { $0.value.content == Array("outside the roots\n".utf8) }.keys.map(SyncFiles.shown)
            #expect(leaked.isEmpty, "content from outside the roots was copied into \(root): \(leaked)")
        }

        let nonUTF8: [UInt8] = Array("caf".utf8) + [0xE9, UInt8(ascii: "-"), 0xFF, 0xFE] + Array(".txt".utf8)
        try await step("a non-UTF-8 file name") { try SyncFiles.write(SyncFiles.join(src, nonUTF8), Array("latin-1\n".utf8)) }
            until: { try SyncExpect.file(dst, nonUTF8, Array("latin-1\n".utf8)) }
        try await step("delete a file") { try SyncFiles.remove(path(src, "b.txt")) }
            until: { try SyncExpect.absent(dst, "b.txt") }
        try await step("delete a non-UTF-8 file") { try SyncFiles.remove(SyncFiles.join(src, nonUTF8)) }
            until: { try SyncFiles.status(SyncFiles.join(dst, nonUTF8)) == nil ? nil : "\(SyncFiles.shown(nonUTF8)) still in \(dst)" }
        try await step("rmdir an empty directory") {
            try SyncFiles.makeDirectory(path(src, "empty"))
        } until: { try SyncExpect.directory(dst, "empty") }
        try await step("rmdir") { try SyncFiles.removeDirectory(path(src, "empty")) }
            until: { try SyncExpect.absent(dst, "empty") }
        try await step("delete a directory tree") {
            try SyncFiles.remove(path(src, "folder/sub/inner.txt"))
            try SyncFiles.removeDirectory(path(src, "folder/sub"))
            try SyncFiles.removeDirectory(path(src, "folder"))
        } until: { try SyncExpect.absent(dst, "folder") }
        try await step("delete symlinks") {
            for name in ["link", "escape-file", "escape-dir"] { try SyncFiles.remove(path(src, name)) }
        } until: { try SyncExpect.all(SyncExpect.absent(dst, "link"), SyncExpect.absent(dst, "escape-file"), SyncExpect.absent(dst, "escape-dir")) }
        #expect(try SyncFiles.status(SyncFiles.join(outside, "secret.txt")) != nil, "the file outside the roots was deleted")
        try await daemon.stop()
    }

    @Test("changes made while the daemon was stopped are found at the next start", arguments: SyncDirection.allCases)
    func changesWhileStopped(_ direction: SyncDirection) async throws {
        let (sandbox, daemon, src, dst) = try direction.sandbox("changesWhileStopped")
        defer { sandbox.finish() }
        func path(_ root: String, _ relative: String) -> [UInt8] { SyncFiles.join(root, relative) }
        for name in ["keep", "modify", "append", "delete", "rename-me", "mode"] {
            try SyncFiles.write(path(src, name + ".txt"), Array("\(name) v1\n".utf8))
        }
        try SyncFiles.makeDirectory(path(src, "old-dir"))
        try SyncFiles.write(path(src, "old-dir/x.txt"), Array("x\n".utf8))
        try SyncFiles.makeSymlink(path(src, "link"), to: "keep.txt")
        try await daemon.start()
        try await sandbox.converge("first sync", src, dst) { try SyncExpect.file(dst, "old-dir/x.txt", "x\n") }
        try await daemon.stop()

        try SyncFiles.write(path(src, "modify.txt"), Array("modify v2, longer\n".utf8))
        try SyncFiles.append(path(src, "append.txt"), Array("appended\n".utf8))
        try SyncFiles.remove(path(src, "delete.txt"))
        try SyncFiles.rename(path(src, "rename-me.txt"), path(src, "renamed.txt"))
        try SyncFiles.setMode(path(src, "mode.txt"), 0o600)
        try SyncFiles.makeDirectory(path(src, "new-dir"))
        try SyncFiles.write(path(src, "new-dir/new.txt"), Array("new\n".utf8))
        try SyncFiles.rename(path(src, "old-dir"), path(src, "moved-dir"))
        try SyncFiles.remove(path(src, "link"))
        try SyncFiles.makeSymlink(path(src, "link2"), to: "modify.txt")

        try await daemon.start()
        try await sandbox.converge("changes made while stopped", src, dst) {
            try SyncExpect.all(SyncExpect.file(dst, "modify.txt", "modify v2, longer\n"), SyncExpect.file(dst, "append.txt", "append v1\nappended\n"),
                      SyncExpect.absent(dst, "delete.txt"), SyncExpect.absent(dst, "rename-me.txt"), SyncExpect.file(dst, "renamed.txt", "rename-me v1\n"),
                      SyncExpect.mode(dst, "mode.txt", 0o600), SyncExpect.file(dst, "new-dir/new.txt", "new\n"), SyncExpect.absent(dst, "old-dir"),
                      SyncExpect.file(dst, "moved-dir/x.txt", "x\n"), SyncExpect.absent(dst, "link"), SyncExpect.symlink(dst, "link2", to: "modify.txt"),
                      SyncExpect.file(dst, "keep.txt", "keep v1\n"))
        }
        try await daemon.stop()
    }

    @Test("an editor's save by rename propagates the final content", arguments: SyncDirection.allCases)
    func saveByRename(_ direction: SyncDirection) async throws {
        let (sandbox, daemon, src, dst) = try direction.sandbox("saveByRename")
        defer { sandbox.finish() }
        func path(_ relative: String) -> [UInt8] { SyncFiles.join(src, relative) }
        try SyncFiles.write(path("notes.txt"), Array("version 1\n".utf8))
        try await daemon.start()
        try await sandbox.converge("first sync", src, dst) { try SyncExpect.file(dst, "notes.txt", "version 1\n") }

        // gedit / VS Code: write a hidden temporary file, rename it over the original.
        try SyncFiles.write(path(".goutputstream-Q2X7LZ"), Array("version 2 from a temp file\n".utf8))
        try SyncFiles.rename(path(".goutputstream-Q2X7LZ"), path("notes.txt"))
        try await sandbox.converge("temp file renamed over notes.txt", src, dst) {
            try SyncExpect.all(SyncExpect.file(dst, "notes.txt", "version 2 from a temp file\n"), SyncExpect.absent(dst, ".goutputstream-Q2X7LZ"))
        }

        // vim with a backup: swap file, original renamed to a backup, new file written, backup
        // and swap file removed.
        try SyncFiles.write(path(".notes.txt.swp"), Array(repeating: 0, count: 4096))
        try SyncFiles.rename(path("notes.txt"), path("notes.txt~"))
        try SyncFiles.write(path("notes.txt"), Array("version 3 written by vim\n".utf8))
        try SyncFiles.remove(path("notes.txt~"))
        try SyncFiles.write(path(".notes.txt.swp"), Array(repeating: 1, count: 4096))
        try SyncFiles.remove(path(".notes.txt.swp"))
        try await sandbox.converge("vim-style save", src, dst) {
            try SyncExpect.all(SyncExpect.file(dst, "notes.txt", "version 3 written by vim\n"), SyncExpect.absent(dst, "notes.txt~"),
                      SyncExpect.absent(dst, ".notes.txt.swp"))
        }
        // Nothing of the dance was left behind (versions of displaced cloud content aside).
        #expect(try SyncFiles.temporaryFiles(in: src).isEmpty && SyncFiles.temporaryFiles(in: dst).isEmpty)
        try await daemon.stop()
    }

    @Test("renaming and moving a 100 MB file keeps its cloud inode (no copy)")
    func renameOfABigFileKeepsTheCloudInode() async throws {
        let sandbox = try SyncSandbox("renameOfABigFile")
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: "alpha")
        let local = daemon.local, cloud = daemon.cloud
        try SyncFiles.makeDirectory(SyncFiles.join(local, "archive"))
        try await daemon.start()
        let clock = ContinuousClock()
        var started = clock.now
        try SyncFiles.write(SyncFiles.join(local, "big.bin"), [UInt8](repeating: 0, count: 100 << 20))
        try await sandbox.converge("the 100 MB file is uploaded", local, cloud, timeout: .seconds(60)) {
            try SyncFiles.status(SyncFiles.join(cloud, "big.bin"))?.st_size == 100 << 20 ? nil : "cloud/big.bin is not complete yet"
        }
        print("[renameOfABigFile] upload of 100 MB took \(clock.now - started)")
        var inode = try #require(try SyncFiles.inode(SyncFiles.join(cloud, "big.bin")))

        // Each step is judged on its own: the inode before it against the inode after it.
        func expectSameInode(_ relative: String, _ what: String) throws {
            let now = try SyncFiles.inode(SyncFiles.join(cloud, relative))
            #expect(now == inode, "\(what) was propagated as a copy: the cloud inode \(inode) became \(now.map(String.init) ?? "absent")")
            if let now { inode = now }
        }
        started = clock.now
        try SyncFiles.rename(SyncFiles.join(local, "big.bin"), SyncFiles.join(local, "renamed.bin"))
        try await sandbox.converge("rename in place", local, cloud, timeout: .seconds(30)) {
            try SyncExpect.all(SyncExpect.absent(cloud, "big.bin"), SyncFiles.status(SyncFiles.join(cloud, "renamed.bin")) == nil ? "no cloud/renamed.bin" : nil)
        }
        print("[renameOfABigFile] rename propagated in \(clock.now - started)")
        try expectSameInode("renamed.bin", "the rename big.bin -> renamed.bin")

        try SyncFiles.rename(SyncFiles.join(local, "renamed.bin"), SyncFiles.join(local, "archive/renamed.bin"))
        try await sandbox.converge("move into an existing directory", local, cloud, timeout: .seconds(30)) {
            try SyncExpect.all(SyncExpect.absent(cloud, "renamed.bin"), SyncFiles.status(SyncFiles.join(cloud, "archive/renamed.bin")) == nil ? "no cloud/archive/renamed.bin" : nil)
        }
        try expectSameInode("archive/renamed.bin", "the move renamed.bin -> archive/renamed.bin")

        try SyncFiles.rename(SyncFiles.join(local, "archive"), SyncFiles.join(local, "archive-2024"))
        try await sandbox.converge("rename of the directory holding it", local, cloud, timeout: .seconds(30)) {
            try SyncExpect.all(SyncExpect.absent(cloud, "archive"), SyncFiles.status(SyncFiles.join(cloud, "archive-2024/renamed.bin")) == nil ? "no cloud/archive-2024/renamed.bin" : nil)
        }
        try expectSameInode("archive-2024/renamed.bin", "the directory rename archive -> archive-2024")

        try SyncFiles.makeDirectory(SyncFiles.join(local, "new-folder"))
        try SyncFiles.rename(SyncFiles.join(local, "archive-2024/renamed.bin"), SyncFiles.join(local, "new-folder/big.bin"))
        try await sandbox.converge("move into a directory created just before", local, cloud, timeout: .seconds(30)) {
            try SyncExpect.all(SyncExpect.absent(cloud, "archive-2024/renamed.bin"), SyncFiles.status(SyncFiles.join(cloud, "new-folder/big.bin")) == nil ? "no cloud/new-folder/big.bin" : nil)
        }
        try expectSameInode("new-folder/big.bin", "the move into the new directory new-folder")
        try await daemon.stop()
    }
}
