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
}
