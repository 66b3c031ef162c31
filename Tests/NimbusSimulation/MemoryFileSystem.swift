import NimbusVocabulary
import Synchronization

/// A `FileSystem` held in memory that behaves like ext4 as an unprivileged daemon sees it,
/// closely enough that an engine passing on it also behaves on disk:
///
/// - inodes: numbers are unique among live entries, kept by rename, and — as on ext4 — a
///   freed number is handed out again (most recently freed first) unless
///   `reusesFreedInodes` is false; an engine must not take "same inode" alone for "same file";
/// - mtimes in nanoseconds from the injected time source; changing a directory's entries
///   moves its mtime; rename keeps the moved entry's mtime;
/// - the errors of the syscalls, in Linux's order (see `MemoryTree+Operations`), and where
///   `DiskFileSystem` turns a syscall's answer into something else (a directory read is
///   `CopyError.notAFile`, a symlink's mode is ignored, a failed install drops its copy, a
///   version never replaces another), what it reports; symlinks are never followed (a
///   symlink inside a path is ELOOP);
/// - permission: a file without the owner's read bit cannot be read and a directory without
///   the owner's read and search bits cannot be listed (EACCES); write permission is checked
///   only with `checksWritePermission` (a directory without the owner's write and search bits
///   then refuses new, removed and renamed entries, and an entry without the owner's write
///   bit refuses changes to its user xattrs, EACCES), so that a test can play the user or
///   root around the engine;
/// - space: file bytes and link targets count against `capacity`; a write that does not fit
///   throws ENOSPC and changes nothing;
/// - the root can be removed (`removeRecursively(.root)`) to play a deleted sync folder:
///   every path is then ENOENT until `makeDirectories(.root)`.
///
/// Every operation is durable at once, so `synchronize()` does nothing and a simulated crash
/// keeps everything done before it — including prepared copies not yet installed, which stay
/// behind as temporary files, as on disk. Listings come in byte order rather than readdir's
/// arbitrary order, so that a seeded run replays identically.
///
/// Thread-safe: the whole tree sits behind one lock, never held while caller code runs
/// (`descend`, `progress`, `duringCopy`), so those may call back into any filesystem.
public final class MemoryFileSystem: FileSystem {
    /// Called by `prepareCopy` after each chunk it copies, with the source's path and the bytes
    /// copied so far; a test edits the source here to play a file changing during a copy.
    public typealias CopyHook = @Sendable (_ source: RelativePath, _ bytesCopied: Int64) -> Void

    let tree: Mutex<MemoryTree>
    let copyHook = Mutex<CopyHook?>(nil)
    /// Where prepared copies are written; nil puts them next to their file.
    let temporaryDirectory: RelativePath?
    /// How much `prepareCopy` moves between two looks at the source; small values let a test
    /// act in the middle of a copy of a small file.
    let copyChunkSize: Int

    /// - Parameters:
    ///   - time: nanoseconds since the epoch for every mtime this filesystem sets
    ///     (`ManualClock.timeSource` in tests).
    ///   - capacity: bytes of content that fit before writes fail with ENOSPC.
    ///   - temporaryDirectory: a directory for prepared copies, created when first needed.
    ///   - device: the `device` reported in metadata; give the two sides different ones.
    public init(time: @escaping @Sendable () -> Int64, capacity: Int64 = 1 << 40,
                temporaryDirectory: RelativePath? = nil, copyChunkSize: Int = 64 * 1024,
                device: UInt64 = 1, reusesFreedInodes: Bool = true) {
        precondition(copyChunkSize > 0, "copyChunkSize must be positive")
        tree = Mutex(MemoryTree(clock: time, capacity: capacity, device: device, reusesFreedInodes: reusesFreedInodes))
        self.temporaryDirectory = temporaryDirectory
        self.copyChunkSize = copyChunkSize
    }

    /// See the type's notes on permission. Off by default.
    public var checksWritePermission: Bool {
        get { tree.withLock { $0.checksWritePermission } }
        set { tree.withLock { $0.checksWritePermission = newValue } }
    }

    public func metadata(of path: RelativePath) throws -> FileMetadata? {
        try tree.withLock { tree in
            do {
                return try tree.lookup(path, "lstat").map { tree.metadata($0) }
            } catch let error as SystemError where error.errno == .noSuchFile || error.errno == .notDirectory {
                // As on disk: a path under a file does not exist.
                return nil
            }
        }
    }

    public func scan(_ directory: RelativePath, descend: (RelativePath) throws -> Bool,
                     checkpoint: Checkpoint) throws -> ScanResult {
        var result = ScanResult()
        try scanEntries(of: directory, into: &result, descend: descend, checkpoint: checkpoint)
        return result
    }

    /// One directory per lock, so `descend` runs unlocked and the tree may change between two
    /// directories, as it can during a scan on disk. Only the top directory's errors are thrown.
    private func scanEntries(of directory: RelativePath, into result: inout ScanResult,
                             descend: (RelativePath) throws -> Bool, checkpoint: Checkpoint) throws {
        let listing = try tree.withLock { try $0.list(directory) }
        for (name, metadata) in listing {
            let path = MemoryTree.child(of: directory, named: name)
            result.entries.append((path, metadata))
            if result.entries.count % CheckpointInterval.scanEntries == 0 { try checkpoint() }
            guard metadata.kind == .directory, try descend(path) else { continue }
            do {
                try scanEntries(of: path, into: &result, descend: descend, checkpoint: checkpoint)
            } catch let error as SystemError {
                result.problems.append(error)
                result.incomplete.append(path)
            }
        }
    }

    public func contentHash(of path: RelativePath, checkpoint: Checkpoint) throws -> ContentHash {
        let bytes = try tree.withLock { try $0.readableFile(path, "open") }
        try checkpoint()  // Read in one go: one chunk.
        return ContentHash(value: fnv1a64(bytes), size: Int64(bytes.count))
    }

    public func readFile(_ path: RelativePath, limit: Int) throws -> [UInt8] {
        let bytes = try tree.withLock { try $0.readableFile(path, "open") }
        if bytes.count > limit { throw Errno.fileTooLarge.at("read", path) }
        return bytes
    }

    public func writeFile(_ path: RelativePath, contents: [UInt8], mode: UInt32) throws {
        try tree.withLock { try $0.replaceFile(path, contents: contents, mode: mode) }
    }

    public func makeDirectory(_ path: RelativePath, mode: UInt32) throws {
        try tree.withLock { try $0.makeDirectory(path, mode: mode) }
    }

    public func makeSymlink(_ path: RelativePath, target: [UInt8]) throws {
        try tree.withLock { try $0.makeSymlink(path, target: target) }
    }

    public func rename(_ from: RelativePath, to: RelativePath, replacing: Bool) throws {
        try tree.withLock { try $0.rename(from, to: to, replacing: replacing) }
    }

    public func removeFile(_ path: RelativePath) throws {
        try tree.withLock { try $0.removeFile(path) }
    }

    public func removeDirectory(_ path: RelativePath) throws {
        try tree.withLock { try $0.removeDirectory(path) }
    }

    public func setAttributes(_ path: RelativePath, mode: UInt32?, mtime: Int64?) throws {
        try tree.withLock { try $0.setAttributes(path, mode: mode, mtime: mtime) }
    }

    /// Nothing to flush: every operation here is durable the moment it returns.
    public func synchronize() throws {}

    public func spaceInfo() throws -> (available: Int64, total: Int64) {
        try tree.withLock { tree in
            guard tree.root != nil else { throw Errno.noSuchFile.at("statvfs", RelativePath.root) }
            return (max(0, tree.capacity - tree.usedBytes), tree.capacity)
        }
    }

    public func extendedAttribute(_ name: String, of path: RelativePath) throws -> [UInt8]? {
        try tree.withLock { try $0.extendedAttribute(name, of: path) }
    }

    public func setExtendedAttribute(_ name: String, of path: RelativePath, to value: [UInt8]) throws {
        try tree.withLock { try $0.setExtendedAttribute(name, of: path, to: value) }
    }

    public func removeExtendedAttribute(_ name: String, of path: RelativePath) throws {
        try tree.withLock { try $0.removeExtendedAttribute(name, of: path) }
    }
}

/// 64-bit FNV-1a. The protocol's real hash is xxHash64; here only equality between two
/// in-memory sides matters, and FNV-1a is short enough to write correctly from its definition.
func fnv1a64(_ bytes: [UInt8]) -> UInt64 {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in bytes {
        hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }
    return hash
}
