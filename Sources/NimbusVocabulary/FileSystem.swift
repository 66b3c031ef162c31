/// One sync root as the engine sees it. Every path is relative to the root; nothing outside
/// the root can be reached and no symlink is ever followed. `DiskFileSystem` is the real one;
/// tests use an in-memory one and fault-injecting wrappers, so whole engine runs can be
/// simulated from a seed.
///
/// Errors are thrown as `SystemError` (errno + operation + path) so logs can name them.
public protocol FileSystem: Sendable {
    /// lstat(2) of `path`, with the target filled in for symlinks; nil when nothing is there.
    func metadata(of path: RelativePath) throws -> FileMetadata?

    /// Every entry below `directory` (not the directory itself), parents before children,
    /// symlinks not followed. `descend` is asked before entering each subdirectory (ignore
    /// rules, `.nimbus`); an entry it refuses is still reported, its contents are not.
    /// Unreadable subdirectories are reported in `problems`, never thrown. `checkpoint` is
    /// asked every `CheckpointInterval.scanEntries` entries, also inside one folder's listing. An
    /// error either throws ends the scan and is thrown as it is: the daemon stopping mid-walk
    /// (`CancellationError`) waits for a thousand entries, not a whole tree or a folder of
    /// 100 000 files.
    func scan(_ directory: RelativePath, descend: (RelativePath) throws -> Bool,
              checkpoint: Checkpoint) throws -> ScanResult

    /// Hash of a regular file's content (see `ContentHash`). `checkpoint` is asked after each
    /// chunk read (a MiB on disk); what it throws ends the hash and is thrown as it is: a stop
    /// waits for a chunk, not a multi-GiB file.
    func contentHash(of path: RelativePath, checkpoint: Checkpoint) throws -> ContentHash

    /// Reads a whole small file (markers, placeholders); refuses files larger than `limit`.
    func readFile(_ path: RelativePath, limit: Int) throws -> [UInt8]

    /// Writes a small file atomically (temp, fsync, rename, fsync directory), replacing any
    /// file already there.
    func writeFile(_ path: RelativePath, contents: [UInt8], mode: UInt32) throws

    func makeDirectory(_ path: RelativePath, mode: UInt32) throws
    func makeSymlink(_ path: RelativePath, target: [UInt8]) throws

    /// rename(2) within the root. With `replacing: false` an existing destination is an error
    /// (`EEXIST`), never overwritten.
    func rename(_ from: RelativePath, to: RelativePath, replacing: Bool) throws

    /// unlink(2) of a file or symlink.
    func removeFile(_ path: RelativePath) throws
    /// rmdir(2): only an empty directory.
    func removeDirectory(_ path: RelativePath) throws

    func setAttributes(_ path: RelativePath, mode: UInt32?, mtime: Int64?) throws

    /// chmod(2) of `path` (never following a final symlink), durable when it returns: a mode
    /// that a journal commit or a removed note will rely on after a power cut.
    func setModeDurably(_ path: RelativePath, to mode: UInt32) throws

    /// Changes the mode of the folder or file at `path` (never following a final symlink) from
    /// `expected` to `mode`, only while it is still the entry `inode` with exactly the mode
    /// `expected`; fsynced when `durable`. Returns whether it did. The mode is read and set
    /// through one descriptor where the entry can be opened (fstat, fchmod), so that a chmod
    /// someone else makes by path between a read and a change is not overwritten by a mode
    /// computed from what was there before (lending a read-only folder its owner's bits, and
    /// putting its mode back).
    func changeMode(_ path: RelativePath, inode: UInt64, from expected: UInt32, to mode: UInt32, durable: Bool) throws -> Bool

    /// First half of an atomic copy: writes `source` (read from `sourceSystem`) to a temporary
    /// file on this filesystem, preserving mode and mtime, and checks that the source still
    /// matches `expected` afterwards (`CopyError.sourceChanged` otherwise). With `durable`
    /// the temporary file is fsynced; without, the caller batches one `synchronize()`.
    /// No temporary file is left behind when this throws. `progress` gets the bytes copied so
    /// far, every few MiB; an error it throws ends the copy (its temporary removed) and is
    /// thrown as it is: the daemon stopping in a multi-GB copy (`CancellationError`).
    func prepareCopy(of source: RelativePath, from sourceSystem: Self, expected: FileMetadata,
                     durable: Bool, progress: (Int64) throws -> Void) throws -> PreparedCopy

    /// `prepareCopy`, creating the file exactly at `staged` (`O_EXCL`, mode 0600 until it is
    /// written), a path inside a staging folder whose folders exist: the folder is published
    /// whole with `publishFolder`, or its files installed one by one.
    func prepareCopy(of source: RelativePath, from sourceSystem: Self, expected: FileMetadata, staged: RelativePath,
                     durable: Bool, progress: (Int64) throws -> Void) throws -> PreparedCopy

    /// Renames the folder `staged` to `destination` in one step that never replaces anything
    /// (`RENAME_NOREPLACE`). False, with nothing changed, when `destination` exists (another
    /// device made it) or this filesystem cannot rename so (the caller installs the files one
    /// by one instead).
    func publishFolder(_ staged: RelativePath, at destination: RelativePath) throws -> Bool

    /// Second half: puts the prepared file at `destination`. With `replacing == nil` the
    /// destination must not exist; otherwise it must still be exactly `replacing`
    /// (`CopyError.destinationChanged` otherwise, and nothing is touched). The replaced file
    /// is moved to `displacedTo` when given (the versions store), else removed. With `durable`
    /// the directory is fsynced. Returns the metadata of the installed file.
    func install(_ copy: PreparedCopy, at destination: RelativePath, replacing: FileMetadata?,
                 displacedTo: RelativePath?, durable: Bool) throws -> FileMetadata

    /// `install`, with the content hash the replaced file must have (the base's, when known):
    /// on a filesystem whose `WriteProtocol` verifies content, a file with other content is
    /// `CopyError.notTheSyncedVersion`, even when its metadata looks unchanged.
    func install(_ copy: PreparedCopy, at destination: RelativePath, replacing: FileMetadata?,
                 expectedHash: ContentHash?, displacedTo: RelativePath?, durable: Bool) throws -> FileMetadata

    /// Moves `path` to `target`, a free name only this device uses (the versions store;
    /// `EEXIST` when taken), if it is still `expected` (`CopyError.destinationChanged`
    /// otherwise). What was moved is then checked (attributes, and content when `hash` is
    /// given); another version is put back and `CopyError.notTheSyncedVersion` thrown.
    func moveAside(_ path: RelativePath, to target: RelativePath, expected: FileMetadata, hash: ContentHash?) throws

    /// What this filesystem supports for safe writes, tried on scratch files in `directory`.
    func probeCapabilities(in directory: RelativePath) throws -> FilesystemCapabilities

    /// From now on, put files in place as `writeProtocol` says (chosen from the capabilities).
    func adopt(_ writeProtocol: WriteProtocol)

    /// Removes a prepared copy that will not be installed.
    func discard(_ copy: PreparedCopy)

    /// Like `prepareCopy`, for a small file made here (a placeholder): writes `contents` to a
    /// temporary file near `path` with `mode`, `mtime` and the given `user.` xattrs, ready
    /// for `install`, so the file appears complete with its attributes or not at all.
    func prepareFile(near path: RelativePath, contents: [UInt8], mode: UInt32, mtime: Int64,
                     attributes: [(String, [UInt8])], durable: Bool) throws -> PreparedCopy

    /// Flushes everything written to this filesystem (syncfs(2)); closes a batch.
    func synchronize() throws

    /// Re-resolves the root by its path: a root replaced or remounted since it was opened is
    /// seen afresh (a cached descriptor would keep reading the old, detached directory).
    func revalidateRoot() throws

    /// Whether a program has the regular file at `path` open for writing: such a local file is
    /// never replaced, deleted or evicted (DESIGN §3), its later writes would go nowhere.
    /// False when nothing is there, or not a regular file.
    func isOpenForWriting(_ path: RelativePath) -> Bool

    /// Whether a program (any, as far as the kernel can tell) has the regular file at `path`
    /// open: nil when this cannot be asked here. Complements `/proc/*/fd`, which shows only
    /// the processes this user may inspect (DESIGN §5: an open file is never evicted).
    func isOpenElsewhere(_ path: RelativePath) -> Bool?

    /// Removes temporary files a crash left behind; returns how many.
    func removeTemporaryFiles() throws -> Int

    /// Removes, anywhere below the root, the temporary files of copies made by this process
    /// (named as `TemporaryName.isCopyTemporary` says) that are left over: one carried off by
    /// a folder renamed during a download cannot be removed by its old path. For a running
    /// daemon, between passes, when none of its own copies is in flight; the temporaries of
    /// others (an application's coordinated write) are left alone. Returns how many.
    func removeLeftoverCopies() throws -> Int

    /// Removes the temporary files directly in `directory` (not below it) that `cleanup`
    /// allows (names, age, open files); a missing directory has none. Returns how many.
    func removeTemporaryFiles(in directory: RelativePath, _ cleanup: TemporaryCleanup) throws -> Int

    /// Removes, anywhere below the root, the temporary files that `cleanup` allows: the
    /// running daemon's periodic sweep of the local folder. Returns how many.
    func removeTemporaryFilesEverywhere(_ cleanup: TemporaryCleanup) throws -> Int

    /// Bytes available to unprivileged users, and the filesystem's size.
    func spaceInfo() throws -> (available: Int64, total: Int64)

    func extendedAttribute(_ name: String, of path: RelativePath) throws -> [UInt8]?
    func setExtendedAttribute(_ name: String, of path: RelativePath, to value: [UInt8]) throws
    func removeExtendedAttribute(_ name: String, of path: RelativePath) throws
}

/// Asked every so often during long work (a scan's entries, a hash's chunks, a copy's): what
/// it throws ends the work there, and is thrown as it is. The engine's throws
/// `CancellationError` once the daemon is stopping, and feeds the watchdog.
public typealias Checkpoint = () throws -> Void

/// How often long work asks its `Checkpoint`.
public enum CheckpointInterval {
    /// Entries of a scan between two checkpoints: a listing of 100 000 entries in one folder
    /// asks about a hundred times, each time a load of an atomic for the engine's.
    public static let scanEntries = 1024
}

extension FileSystem {
    /// `scan` without checkpoints.
    public func scan(_ directory: RelativePath, descend: (RelativePath) throws -> Bool) throws -> ScanResult {
        try scan(directory, descend: descend, checkpoint: {})
    }

    /// `contentHash` without checkpoints.
    public func contentHash(of path: RelativePath) throws -> ContentHash {
        try contentHash(of: path, checkpoint: {})
    }

    public func revalidateRoot() throws {}
    /// A simulated tree has no folder renamed under a copy in flight.
    public func removeLeftoverCopies() throws -> Int { 0 }
    public func removeTemporaryFilesEverywhere(_ cleanup: TemporaryCleanup) throws -> Int { 0 }
    /// No program writes to a simulated tree behind the engine's back.
    public func isOpenForWriting(_ path: RelativePath) -> Bool { false }
    public func isOpenElsewhere(_ path: RelativePath) -> Bool? { nil }

    public func install(_ copy: PreparedCopy, at destination: RelativePath, replacing: FileMetadata?,
                        expectedHash: ContentHash?, displacedTo: RelativePath?, durable: Bool) throws -> FileMetadata {
        try install(copy, at: destination, replacing: replacing, displacedTo: displacedTo, durable: durable)
    }

    /// A filesystem without caches (the in-memory one): the check before the move is the truth.
    public func moveAside(_ path: RelativePath, to target: RelativePath, expected: FileMetadata, hash: ContentHash?) throws {
        guard let current = try metadata(of: path), current.isUnchanged(from: expected) else {
            throw CopyError.destinationChanged(path)
        }
        if let hash, current.kind == .file, try contentHash(of: path) != hash {
            throw CopyError.notTheSyncedVersion(path, keptAt: nil)
        }
        try rename(path, to: target, replacing: false)
    }

    public func probeCapabilities(in directory: RelativePath) throws -> FilesystemCapabilities { .complete }

    /// A simulated tree renames atomically and never replaces with `replacing: false`.
    public func publishFolder(_ staged: RelativePath, at destination: RelativePath) throws -> Bool {
        do {
            try rename(staged, to: destination, replacing: false)
            return true
        } catch let error as SystemError where error.errno == .fileExists || error.errno == .directoryNotEmpty {
            return false
        }
    }

    public func adopt(_ writeProtocol: WriteProtocol) {}

    /// By path: nothing else changes a simulated tree between the read and the change.
    public func changeMode(_ path: RelativePath, inode: UInt64, from expected: UInt32, to mode: UInt32, durable: Bool) throws -> Bool {
        guard let current = try metadata(of: path), current.inode == inode, current.mode == expected,
              current.kind == .directory || current.kind == .file else { return false }
        if durable { try setModeDurably(path, to: mode) } else { try setAttributes(path, mode: mode, mtime: nil) }
        return true
    }

    /// The mode, then the whole filesystem flushed: right everywhere, if heavier than needed.
    public func setModeDurably(_ path: RelativePath, to mode: UInt32) throws {
        try setAttributes(path, mode: mode, mtime: nil)
        try synchronize()
    }
}

public struct ScanResult: Sendable {
    public var entries: [(path: RelativePath, metadata: FileMetadata)]
    public var problems: [SystemError]
    /// The paths whose own entry or contents could not be read (each problem's path): what
    /// is below them is incomplete and must not be taken as deleted.
    public var incomplete: [RelativePath]

    public init(entries: [(path: RelativePath, metadata: FileMetadata)] = [], problems: [SystemError] = [],
                incomplete: [RelativePath] = []) {
        self.entries = entries
        self.problems = problems
        self.incomplete = incomplete
    }
}

/// A fully written temporary file waiting to be installed.
public struct PreparedCopy: Sendable, Hashable {
    /// Where the temporary file is, relative to the root.
    public var temporary: RelativePath
    /// The source's metadata as it was copied (kind, size, mtime, mode).
    public var source: FileMetadata
    public var bytesCopied: Int64
    /// The content hash of what was copied, read from the source during the copy (the source
    /// did not change meanwhile) where the destination asked for it: nil when not computed.
    /// Reading the temporary file back instead would cost a second transfer on a network
    /// filesystem, whose client may also change the file's attributes while it uploads it
    /// (an rclone mount), which a read takes for a concurrent write.
    public var contentHash: ContentHash?
    /// The temporary file's own metadata once written (its inode, the source's mode and
    /// mtime), read before it was closed: nil when not read. A rename of the file, or of the
    /// staging folder holding it, changes none of it.
    public var written: FileMetadata?

    public init(temporary: RelativePath, source: FileMetadata, bytesCopied: Int64, contentHash: ContentHash? = nil,
                written: FileMetadata? = nil) {
        self.temporary = temporary
        self.source = source
        self.bytesCopied = bytesCopied
        self.contentHash = contentHash
        self.written = written
    }
}

public enum CopyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The source was modified while it was copied; try again once it is quiet.
    case sourceChanged(RelativePath)
    /// The destination is no longer what the plan expected (another device or process).
    case destinationChanged(RelativePath)
    /// The source is not a regular file.
    case notAFile(RelativePath)
    /// The destination is open for writing in a program: replacing it would send the
    /// program's later writes to a file without a name. Tried again once it is closed.
    case destinationInUse(RelativePath)
    /// The file about to be replaced or deleted turned out, once moved aside, not to be the
    /// version last synced (another device replaced it, and a cache hid it). It was put back,
    /// or, when its name was taken again meanwhile, left at `keptAt`.
    case notTheSyncedVersion(RelativePath, keptAt: RelativePath?)

    public var description: String {
        switch self {
        case .sourceChanged(let p): "\(p) changed while it was being copied; it will be copied again once it is quiet"
        case .destinationChanged(let p): "\(p) was changed by someone else before it could be replaced"
        case .notAFile(let p): "\(p) is not a regular file"
        case .destinationInUse(let p): "\(p) is open for writing in a program; it is synced once the program closes it"
        case .notTheSyncedVersion(let p, let kept):
            "\(p) was replaced by another device (its metadata was cached)" + (kept.map { "; that version is kept at \($0)" } ?? "")
        }
    }
}

/// Identifies file content for "same content?" decisions when metadata disagrees. It is a
/// fast non-cryptographic hash (xxHash64) plus the size: collisions are astronomically
/// unlikely for ordinary files and the hash is never used for security.
public struct ContentHash: Hashable, Sendable, CustomStringConvertible {
    public var value: UInt64
    public var size: Int64

    public init(value: UInt64, size: Int64) {
        self.value = value
        self.size = size
    }

    public var description: String {
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// Names Nimbus gives its temporary files, so scanners, watchers and ignore rules skip them.
public enum TemporaryName {
    public static let prefix: [UInt8] = Array(".nimbus-tmp-".utf8)
    public static func isTemporary(_ name: [UInt8]) -> Bool { name.starts(with: prefix) }
    /// The name of a copy's temporary file: the prefix and 16 lowercase hex digits (not an
    /// application's `.nimbus-tmp-write-…`).
    public static func isCopyTemporary(_ name: [UInt8]) -> Bool {
        name.count == prefix.count + 16 && isTemporary(name)
            && name.dropFirst(prefix.count).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
