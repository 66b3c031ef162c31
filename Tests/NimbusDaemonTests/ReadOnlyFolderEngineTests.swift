import Testing
import NimbusCore
import NimbusSimulation
import NimbusVocabulary
@testable import NimbusDaemon

/// The executor in folders without their owner's write bit, on filesystems that refuse
/// changes to such folders as they do to a daemon without CAP_DAC_OVERRIDE
/// (`MemoryFileSystem.checksWritePermission`): the folders are lent the bits while the engine
/// works in them and end with their exact modes, recorded as such.
@Suite struct ReadOnlyFolderEngineTests {
    enum Direction: CaseIterable { case upload, download }

    /// A pair whose filesystems check write permission, and the side changes start from.
    static func pair(_ direction: Direction) -> (pair: Pair, source: MemoryFileSystem, target: MemoryFileSystem) {
        let pair = Pair()
        pair.local.checksWritePermission = true
        pair.cloud.checksWritePermission = true
        return direction == .upload ? (pair, pair.local, pair.cloud) : (pair, pair.cloud, pair.local)
    }

    /// Writes as root does (whatever the folders' modes), as the user's other device would.
    static func asRoot(_ fs: MemoryFileSystem, _ change: () throws -> Void) rethrows {
        fs.checksWritePermission = false
        defer { fs.checksWritePermission = true }
        try change()
    }

    /// 3 files: copied one by one; 20: a batch, and an upload staged as one folder.
    @Test(arguments: Direction.allCases, [3, 20])
    func aReadOnlyTreeArrivesWithItsModes(_ direction: Direction, files: Int) throws {
        let (pair, source, target) = Self.pair(direction)
        for index in 0..<files { try source.write(rp(index % 2 == 0 ? "d/f\(index)" : "d/e/f\(index)"), Array("file \(index)".utf8)) }
        try source.setAttributes(rp("d/e"), mode: 0o500, mtime: nil)
        try source.setAttributes(rp("d"), mode: 0o555, mtime: nil)
        pair.engine.start()
        for index in 0..<files {
            let path = index % 2 == 0 ? "d/f\(index)" : "d/e/f\(index)"
            #expect(pair.content(target, path) == "file \(index)", "\(path) copied")
        }
        #expect(try target.metadata(of: rp("d"))?.mode == 0o555)
        #expect(try target.metadata(of: rp("d/e"))?.mode == 0o500)
        #expect(pair.engine.entry(rp("d"))?.state == .downloaded, "the folder is recorded as synced")
        // Recorded with their exact modes: the next pass has nothing to do.
        let copied = pair.engine.status.filesCopied
        pair.sync()
        #expect(pair.engine.status.filesCopied == copied)
        #expect(try source.metadata(of: rp("d"))?.mode == 0o555 && target.metadata(of: rp("d"))?.mode == 0o555)
        #expect(pair.engine.status.lastError == nil, "\(pair.engine.status.lastError ?? "")")
    }

    @Test(arguments: Direction.allCases)
    func deletionsRenamesAndNewFilesInsideReadOnlyFoldersFollow(_ direction: Direction) throws {
        let (pair, source, target) = Self.pair(direction)
        for name in ["d/a", "d/b", "d/e/c"] { try source.write(rp(name), Array(name.utf8)) }
        pair.engine.start()
        // Made read-only after the files were synced, together with a new file inside.
        try source.write(rp("d/new"), Array("new".utf8))
        try source.setAttributes(rp("d/e"), mode: 0o500, mtime: nil)
        try source.setAttributes(rp("d"), mode: 0o555, mtime: nil)
        pair.sync()
        #expect(pair.content(target, "d/new") == "new")
        #expect(try target.metadata(of: rp("d"))?.mode == 0o555 && target.metadata(of: rp("d/e"))?.mode == 0o500)

        try Self.asRoot(source) {
            try source.removeFile(rp("d/a"))
            try source.rename(rp("d/b"), to: rp("d/e/b"), replacing: false)
        }
        pair.sync()
        #expect(try target.metadata(of: rp("d/a")) == nil, "the deletion followed")
        #expect(try target.metadata(of: rp("d/b")) == nil && pair.content(target, "d/e/b") == "d/b", "the rename followed")
        #expect(try target.metadata(of: rp("d"))?.mode == 0o555 && target.metadata(of: rp("d/e"))?.mode == 0o500)

        // A read-only folder moved to another read-only folder: its `..` changes too.
        try Self.asRoot(source) { try source.rename(rp("d/e"), to: rp("d/e2"), replacing: false) }
        try source.write(rp("g/x"), Array("x".utf8))
        try source.setAttributes(rp("g"), mode: 0o555, mtime: nil)
        pair.sync()
        try Self.asRoot(source) { try source.rename(rp("d/e2"), to: rp("g/e"), replacing: false) }
        pair.sync()
        #expect(try pair.content(target, "g/e/b") == "d/b" && target.metadata(of: rp("d/e2")) == nil, "the folder moved")
        #expect(try target.metadata(of: rp("g/e"))?.mode == 0o500 && target.metadata(of: rp("g"))?.mode == 0o555)

        try Self.asRoot(source) { try source.removeRecursively(rp("d")) }
        pair.sync()
        #expect(try target.metadata(of: rp("d")) == nil, "the read-only tree was removed")
        #expect(pair.engine.status.lastError == nil, "\(pair.engine.status.lastError ?? "")")
    }

    /// A crash after a folder was made with the bits the engine lends itself, before its mode
    /// was set and anything recorded: the next start gives both sides the user's mode, whichever
    /// side the folder was made on.
    @Test(arguments: Direction.allCases)
    func aFolderLeftWritableByACrashGetsTheUsersModeAtTheNextStart(_ direction: Direction) throws {
        let (pair, source, target) = Self.pair(direction)
        for fs in [source, target] { try fs.write(rp("d/a"), Array("a".utf8)) }
        try source.setAttributes(rp("d"), mode: 0o555, mtime: nil)
        try target.setAttributes(rp("d"), mode: 0o755, mtime: nil)
        pair.engine.start()
        #expect(try source.metadata(of: rp("d"))?.mode == 0o555 && target.metadata(of: rp("d"))?.mode == 0o555)
        #expect(pair.engine.entry(rp("d"))?.state == .downloaded)
    }

    /// Read-only files get their state mark although the filesystem refuses a user xattr on
    /// a file without its owner's write bit (`SyncEngine+StateMarks`): they keep their mode on
    /// both sides, and the next pass has nothing to do. 1 file: marked alone; 6: together.
    @Test(arguments: Direction.allCases, [1, 6])
    func readOnlyFilesGetTheirStateMarkAndKeepTheirMode(_ direction: Direction, files: Int) throws {
        let (pair, source, target) = Self.pair(direction)
        for index in 0..<files {
            try source.write(rp("f\(index)"), Array("file \(index)".utf8))
            try source.setAttributes(rp("f\(index)"), mode: index % 2 == 0 ? 0o444 : 0o400, mtime: nil)
        }
        pair.clock.advance(by: .seconds(1))  // Not written just now: recorded once and for all.
        pair.engine.start()
        for index in 0..<files {
            let mode: UInt32 = index % 2 == 0 ? 0o444 : 0o400
            let mark = try pair.local.extendedAttribute(Placeholder.stateAttribute, of: rp("f\(index)"))
            #expect(mark.map { String(decoding: $0, as: UTF8.self) } == "downloaded", "f\(index) is marked")
            #expect(try source.metadata(of: rp("f\(index)"))?.mode == mode && target.metadata(of: rp("f\(index)"))?.mode == mode)
        }
        #expect(pair.store.lentNote.isEmpty, "no file is left lent")
        let (writes, copied) = (pair.store.writes, pair.engine.status.filesCopied)
        pair.sync()
        #expect(pair.store.writes == writes && pair.engine.status.filesCopied == copied, "the next pass has nothing to do")
    }

    /// On demand: placeholders are written into a read-only folder, and a download and an
    /// eviction asked for later (outside a pass) replace them there; the folder stays read-only.
    @Test func placeholdersInAReadOnlyFolderAreDownloadedAndEvicted() throws {
        let pair = Pair { $0.onDemand = true }
        pair.local.checksWritePermission = true
        pair.cloud.checksWritePermission = true
        try pair.cloud.write(rp("d/a"), Array("one".utf8))
        try pair.cloud.setAttributes(rp("d"), mode: 0o555, mtime: nil)
        pair.engine.start()
        #expect(pair.engine.entry(rp("d/a"))?.state == .notDownloaded)
        #expect(try pair.local.metadata(of: rp("d"))?.mode == 0o555)
        _ = try pair.engine.download(rp("d/a"), .explicit)
        #expect(pair.content(pair.local, "d/a") == "one")
        #expect(try pair.local.metadata(of: rp("d/a.nimbus")) == nil)
        #expect(try pair.local.metadata(of: rp("d"))?.mode == 0o555)
        _ = try pair.engine.evict(rp("d/a"))
        #expect(pair.engine.entry(rp("d/a"))?.state == .notDownloaded)
        #expect(try pair.local.metadata(of: rp("d"))?.mode == 0o555)
    }

    /// A conflict inside a read-only folder keeps both versions there and is settled there.
    @Test(arguments: ConflictChoice.allCases)
    func aConflictInsideAReadOnlyFolderIsKeptAndSettled(_ choice: ConflictChoice) throws {
        let (pair, local, cloud) = Self.pair(.upload)
        try local.write(rp("d/notes.md"), Array("base".utf8))
        try local.setAttributes(rp("d"), mode: 0o555, mtime: nil)
        pair.engine.start()
        try Self.asRoot(local) { try local.write(rp("d/notes.md"), Array("mine".utf8)) }
        try Self.asRoot(cloud) { try cloud.write(rp("d/notes.md"), Array("theirs!".utf8)) }
        pair.sync()
        let copy = try #require(pair.engine.conflicts().first?.conflictCopy, "a conflict")
        #expect(pair.content(local, "d/notes.md") == "theirs!" && pair.content(cloud, copy.description) == "mine")
        try pair.engine.resolve(rp("d/notes.md"), keep: choice)
        pair.sync()
        let kept = choice == .local ? "mine" : "theirs!"
        #expect(pair.content(local, "d/notes.md") == kept && pair.content(cloud, "d/notes.md") == kept)
        #expect(pair.engine.conflicts().isEmpty)
        #expect(try local.metadata(of: rp("d"))?.mode == 0o555 && cloud.metadata(of: rp("d"))?.mode == 0o555)
    }
}
