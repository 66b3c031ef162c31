import Glibc
import Testing

/// The real `nimbusd` on real folders: every kind of change, in each direction, while it runs
/// and while it is stopped; editors' save-by-rename; renames that must not copy.
@Suite(.timeLimit(.minutes(3)))
struct SyncBasicsTests {
    typealias F = SyncFiles
    typealias E = SyncExpect

    @Test("each kind of change reaches the other side while the daemon runs", arguments: SyncDirection.allCases)
    func everyKindOfChange(_ direction: SyncDirection) async throws {
        let sandbox = try SyncSandbox("everyKindOfChange-\(direction)")
        defer { sandbox.finish() }
        let outside = try sandbox.folder("outside")
        try F.write(F.join(outside, "secret.txt"), Array("outside the roots\n".utf8))
        let daemon = try sandbox.daemon(device: "alpha")
        try await daemon.start()
        let src = direction.source(daemon), dst = direction.target(daemon)
        func path(_ root: String, _ relative: String) -> [UInt8] { F.join(root, relative) }
        func step(_ name: String, _ change: () throws -> Void, until check: () throws -> String?) async throws {
            try change()
            try await sandbox.converge("\(direction): \(name)", src, dst, check)
        }

        try await step("create") { try F.write(path(src, "a.txt"), Array("hello\n".utf8)) }
            until: { try E.file(dst, "a.txt", "hello\n") }
        try await step("modify (same size)") { try F.write(path(src, "a.txt"), Array("HELLO\n".utf8)) }
            until: { try E.file(dst, "a.txt", "HELLO\n") }
        try await step("modify (shorter)") { try F.write(path(src, "a.txt"), Array("bye\n".utf8)) }
            until: { try E.file(dst, "a.txt", "bye\n") }
        try await step("append") { try F.append(path(src, "a.txt"), Array("and more\n".utf8)) }
            until: { try E.file(dst, "a.txt", "bye\nand more\n") }
        try await step("chmod a file") { try F.setMode(path(src, "a.txt"), 0o750) }
            until: { try E.mode(dst, "a.txt", 0o750) }
        try await step("mkdir") { try F.makeDirectory(path(src, "dir")) }
            until: { try E.directory(dst, "dir") }
        try await step("create in a new directory") {
            try F.makeDirectory(path(src, "dir/sub"), mode: 0o700)
            try F.write(path(src, "dir/sub/inner.txt"), Array("inner\n".utf8), mode: 0o600)
        } until: { try E.all(E.file(dst, "dir/sub/inner.txt", "inner\n"), E.directory(dst, "dir/sub", mode: 0o700)) }

        let inodeBefore = try F.inode(path(dst, "a.txt"))
        try await step("rename a file") { try F.rename(path(src, "a.txt"), path(src, "b.txt")) }
            until: { try E.all(E.file(dst, "b.txt", "bye\nand more\n"), E.absent(dst, "a.txt")) }
        let inodeAfter = try F.inode(path(dst, "b.txt"))
        #expect(inodeBefore == inodeAfter, "the rename of a.txt to b.txt was not propagated as a rename: inode \(inodeBefore ?? 0) became \(inodeAfter ?? 0) in \(dst)")

        try await step("rename a directory") { try F.rename(path(src, "dir"), path(src, "folder")) }
            until: { try E.all(E.file(dst, "folder/sub/inner.txt", "inner\n"), E.absent(dst, "dir")) }
        try await step("chmod a directory") { try F.setMode(path(src, "folder"), 0o711) }
            until: { try E.directory(dst, "folder", mode: 0o711) }
        try await step("symlink inside the root") { try F.makeSymlink(path(src, "link"), to: "b.txt") }
            until: { try E.symlink(dst, "link", to: "b.txt") }
        try await step("symlinks pointing outside the root") {
            try F.makeSymlink(path(src, "escape-file"), to: "../outside/secret.txt")
            try F.makeSymlink(path(src, "escape-dir"), to: outside)
        } until: { try E.all(E.symlink(dst, "escape-file", to: "../outside/secret.txt"), E.symlink(dst, "escape-dir", to: outside)) }
        // Never followed: nothing of the outside folder was copied anywhere.
        for root in [src, dst] {
            let tree = try SyncTree(scanning: root, includeNimbusOwn: true)
            let leaked = tree.entries.filter { $0.value.content == Array("outside the roots\n".utf8) }.keys.map(F.shown)
            #expect(leaked.isEmpty, "content from outside the roots was copied into \(root): \(leaked)")
        }

        let nonUTF8: [UInt8] = Array("caf".utf8) + [0xE9, UInt8(ascii: "-"), 0xFF, 0xFE] + Array(".txt".utf8)
        try await step("a non-UTF-8 file name") { try F.write(F.join(src, nonUTF8), Array("latin-1\n".utf8)) }
            until: { try E.file(dst, nonUTF8, Array("latin-1\n".utf8)) }
        try await step("delete a file") { try F.remove(path(src, "b.txt")) }
            until: { try E.absent(dst, "b.txt") }
        try await step("delete a non-UTF-8 file") { try F.remove(F.join(src, nonUTF8)) }
            until: { try F.status(F.join(dst, nonUTF8)) == nil ? nil : "\(F.shown(nonUTF8)) still in \(dst)" }
        try await step("rmdir an empty directory") {
            try F.makeDirectory(path(src, "empty"))
        } until: { try E.directory(dst, "empty") }
        try await step("rmdir") { try F.removeDirectory(path(src, "empty")) }
            until: { try E.absent(dst, "empty") }
        try await step("delete a directory tree") {
            try F.remove(path(src, "folder/sub/inner.txt"))
            try F.removeDirectory(path(src, "folder/sub"))
            try F.removeDirectory(path(src, "folder"))
        } until: { try E.absent(dst, "folder") }
        try await step("delete symlinks") {
            for name in ["link", "escape-file", "escape-dir"] { try F.remove(path(src, name)) }
        } until: { try E.all(E.absent(dst, "link"), E.absent(dst, "escape-file"), E.absent(dst, "escape-dir")) }
        #expect(try F.status(F.join(outside, "secret.txt")) != nil, "the file outside the roots was deleted")
        try await daemon.stop()
    }

    @Test("changes made while the daemon was stopped are found at the next start", arguments: SyncDirection.allCases)
    func changesWhileStopped(_ direction: SyncDirection) async throws {
        let sandbox = try SyncSandbox("changesWhileStopped-\(direction)")
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: "alpha")
        let src = direction.source(daemon), dst = direction.target(daemon)
        func path(_ root: String, _ relative: String) -> [UInt8] { F.join(root, relative) }
        for name in ["keep", "modify", "append", "delete", "rename-me", "mode"] {
            try F.write(path(src, name + ".txt"), Array("\(name) v1\n".utf8))
        }
        try F.makeDirectory(path(src, "old-dir"))
        try F.write(path(src, "old-dir/x.txt"), Array("x\n".utf8))
        try F.makeSymlink(path(src, "link"), to: "keep.txt")
        try await daemon.start()
        try await sandbox.converge("first sync", src, dst) { try E.file(dst, "old-dir/x.txt", "x\n") }
        try await daemon.stop()

        try F.write(path(src, "modify.txt"), Array("modify v2, longer\n".utf8))
        try F.append(path(src, "append.txt"), Array("appended\n".utf8))
        try F.remove(path(src, "delete.txt"))
        try F.rename(path(src, "rename-me.txt"), path(src, "renamed.txt"))
        try F.setMode(path(src, "mode.txt"), 0o600)
        try F.makeDirectory(path(src, "new-dir"))
        try F.write(path(src, "new-dir/new.txt"), Array("new\n".utf8))
        try F.rename(path(src, "old-dir"), path(src, "moved-dir"))
        try F.remove(path(src, "link"))
        try F.makeSymlink(path(src, "link2"), to: "modify.txt")

        try await daemon.start()
        try await sandbox.converge("changes made while stopped", src, dst) {
            try E.all(E.file(dst, "modify.txt", "modify v2, longer\n"), E.file(dst, "append.txt", "append v1\nappended\n"),
                      E.absent(dst, "delete.txt"), E.absent(dst, "rename-me.txt"), E.file(dst, "renamed.txt", "rename-me v1\n"),
                      E.mode(dst, "mode.txt", 0o600), E.file(dst, "new-dir/new.txt", "new\n"), E.absent(dst, "old-dir"),
                      E.file(dst, "moved-dir/x.txt", "x\n"), E.absent(dst, "link"), E.symlink(dst, "link2", to: "modify.txt"),
                      E.file(dst, "keep.txt", "keep v1\n"))
        }
        try await daemon.stop()
    }

    @Test("an editor's save by rename propagates the final content", arguments: SyncDirection.allCases)
    func saveByRename(_ direction: SyncDirection) async throws {
        let sandbox = try SyncSandbox("saveByRename-\(direction)")
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: "alpha")
        let src = direction.source(daemon), dst = direction.target(daemon)
        func path(_ relative: String) -> [UInt8] { F.join(src, relative) }
        try F.write(path("notes.txt"), Array("version 1\n".utf8))
        try await daemon.start()
        try await sandbox.converge("first sync", src, dst) { try E.file(dst, "notes.txt", "version 1\n") }

        // gedit / VS Code: write a hidden temporary file, rename it over the original.
        try F.write(path(".goutputstream-Q2X7LZ"), Array("version 2 from a temp file\n".utf8))
        try F.rename(path(".goutputstream-Q2X7LZ"), path("notes.txt"))
        try await sandbox.converge("temp file renamed over notes.txt", src, dst) {
            try E.all(E.file(dst, "notes.txt", "version 2 from a temp file\n"), E.absent(dst, ".goutputstream-Q2X7LZ"))
        }

        // vim with a backup: swap file, original renamed to a backup, new file written, backup
        // and swap file removed.
        try F.write(path(".notes.txt.swp"), Array(repeating: 0, count: 4096))
        try F.rename(path("notes.txt"), path("notes.txt~"))
        try F.write(path("notes.txt"), Array("version 3 written by vim\n".utf8))
        try F.remove(path("notes.txt~"))
        try F.write(path(".notes.txt.swp"), Array(repeating: 1, count: 4096))
        try F.remove(path(".notes.txt.swp"))
        try await sandbox.converge("vim-style save", src, dst) {
            try E.all(E.file(dst, "notes.txt", "version 3 written by vim\n"), E.absent(dst, "notes.txt~"),
                      E.absent(dst, ".notes.txt.swp"))
        }
        // Nothing of the dance was left behind (versions of displaced cloud content aside).
        #expect(try F.temporaryFiles(in: src).isEmpty && F.temporaryFiles(in: dst).isEmpty)
        try await daemon.stop()
    }

    @Test("renaming and moving a 100 MB file keeps its cloud inode (no copy)")
    func renameOfABigFileKeepsTheCloudInode() async throws {
        let sandbox = try SyncSandbox("renameOfABigFile")
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: "alpha")
        let local = daemon.local, cloud = daemon.cloud
        try F.makeDirectory(F.join(local, "archive"))
        try await daemon.start()
        let clock = ContinuousClock()
        var started = clock.now
        try F.write(F.join(local, "big.bin"), [UInt8](repeating: 0, count: 100 << 20))
        try await sandbox.converge("the 100 MB file is uploaded", local, cloud, timeout: .seconds(60)) {
            try F.status(F.join(cloud, "big.bin"))?.st_size == 100 << 20 ? nil : "cloud/big.bin is not complete yet"
        }
        print("[renameOfABigFile] upload of 100 MB took \(clock.now - started)")
        var inode = try #require(try F.inode(F.join(cloud, "big.bin")))

        // Each step is judged on its own: the inode before it against the inode after it.
        func expectSameInode(_ relative: String, _ what: String) throws {
            let now = try F.inode(F.join(cloud, relative))
            #expect(now == inode, "\(what) was propagated as a copy: the cloud inode \(inode) became \(now.map(String.init) ?? "absent")")
            if let now { inode = now }
        }
        started = clock.now
        try F.rename(F.join(local, "big.bin"), F.join(local, "renamed.bin"))
        try await sandbox.converge("rename in place", local, cloud, timeout: .seconds(30)) {
            try E.all(E.absent(cloud, "big.bin"), F.status(F.join(cloud, "renamed.bin")) == nil ? "no cloud/renamed.bin" : nil)
        }
        print("[renameOfABigFile] rename propagated in \(clock.now - started)")
        try expectSameInode("renamed.bin", "the rename big.bin -> renamed.bin")

        try F.rename(F.join(local, "renamed.bin"), F.join(local, "archive/renamed.bin"))
        try await sandbox.converge("move into an existing directory", local, cloud, timeout: .seconds(30)) {
            try E.all(E.absent(cloud, "renamed.bin"), F.status(F.join(cloud, "archive/renamed.bin")) == nil ? "no cloud/archive/renamed.bin" : nil)
        }
        try expectSameInode("archive/renamed.bin", "the move renamed.bin -> archive/renamed.bin")

        try F.rename(F.join(local, "archive"), F.join(local, "archive-2024"))
        try await sandbox.converge("rename of the directory holding it", local, cloud, timeout: .seconds(30)) {
            try E.all(E.absent(cloud, "archive"), F.status(F.join(cloud, "archive-2024/renamed.bin")) == nil ? "no cloud/archive-2024/renamed.bin" : nil)
        }
        try expectSameInode("archive-2024/renamed.bin", "the directory rename archive -> archive-2024")

        try F.makeDirectory(F.join(local, "new-folder"))
        try F.rename(F.join(local, "archive-2024/renamed.bin"), F.join(local, "new-folder/big.bin"))
        try await sandbox.converge("move into a directory created just before", local, cloud, timeout: .seconds(30)) {
            try E.all(E.absent(cloud, "archive-2024/renamed.bin"), F.status(F.join(cloud, "new-folder/big.bin")) == nil ? "no cloud/new-folder/big.bin" : nil)
        }
        try expectSameInode("new-folder/big.bin", "the move into the new directory new-folder")
        try await daemon.stop()
    }
}
