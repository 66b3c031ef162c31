import Glibc
import NimbusVocabulary

/// Real-name placeholders on disk (DESIGN §5): a not-downloaded `dir/report.pdf` is a sparse
/// file at `dir/report.pdf` with the cloud file's size, mtime and mode and no data blocks,
/// marked in the daemon's `FanotifyGroup` so that the first open or read waits while the
/// content is written in (`fill`). These are the three file operations; when to do them is
/// the plan's business.
public enum RealNamePlaceholderFile {
    /// The cloud file a placeholder stands for.
    public struct Shape: Hashable, Sendable {
        public var size: Int64
        public var mtime: Int64
        public var mode: UInt32
        public init(size: Int64, mtime: Int64, mode: UInt32) {
            self.size = size
            self.mtime = mtime
            self.mode = mode
        }
    }

    /// Creates `path` beneath `root` as a not-downloaded file of `shape`, never replacing
    /// anything (`EEXIST` when the name is taken): a temporary file gets the size (a hole,
    /// no blocks), `attributes`, the mark in `group` (before anyone can open it under its real
    /// name), the mode and the mtime, then takes its name with an exclusive rename. With
    /// `durable`, the file and its directory are synced first. Returns what `lstat` says of it.
    public static func create(beneath root: FileDescriptor, _ path: RelativePath, shape: Shape,
                              attributes: [(name: String, value: [UInt8])], marking group: FanotifyGroup?,
                              durable: Bool) throws -> FileMetadata {
        let temporary = try attributing("create", path.parent.shown) {
            try TemporaryFile.create(beneath: root, in: path.parent)
        }
        let metadata = try shapeNotDownloaded(temporary, beneath: root, shape: shape, attributes: attributes,
                                              marking: group, durable: durable)
        do {
            try attributing("rename", path.shown) {
                try root.withParent(of: temporary.path) { directory, name in
                    try directory.renameNoReplace(name, to: SystemPath(bytes: path.name), in: directory)
                }
                if durable { try root.syncDirectory(path.parent) }
            }
            return metadata
        } catch {
            temporary.remove(beneath: root)
            throw error
        }
    }

    /// Makes the new `temporary` file a not-downloaded file of `shape`: the size (a hole, no
    /// blocks), `attributes`, the mark in `group`, then the mode and the mtime; with `durable`,
    /// synced. `marked` is told the file's metadata once it is marked. Closes the file (once:
    /// closing again on a later failure could close a descriptor another thread has just been
    /// given), or removes it on any failure. Returns what `fstat` said of it last.
    static func shapeNotDownloaded(_ temporary: TemporaryFile, beneath root: FileDescriptor, shape: Shape,
                                   attributes: [(name: String, value: [UInt8])], marking group: FanotifyGroup?,
                                   durable: Bool, marked: ((FileMetadata) -> Void)? = nil) throws -> FileMetadata {
        let metadata: FileMetadata
        do {
            metadata = try attributing("create", temporary.path.shown) { () throws -> FileMetadata in
                let file = temporary.descriptor
                try file.resize(to: shape.size)
                for attribute in attributes {
                    try attribute.value.withUnsafeBytes { try Sys.fsetxattr(file.rawValue, attribute.name, $0) }
                }
                // Marked while still 0600 (marking needs read permission, the real mode may lack
                // it), through the descriptor: no name is looked up again, so nothing swapped in
                // for the temporary file (a hard link to someone else's file) can be marked.
                try group?.mark(file: file)
                if let marked { marked(try file.metadata()) }
                try file.setPermissions(shape.mode)
                try file.setModificationTime(shape.mtime)
                if durable { try file.sync() }
                return try file.metadata()
            }
        } catch {
            temporary.abandon(beneath: root)
            throw error
        }
        try temporary.closeOrRemove(beneath: root)
        return metadata
    }

    /// What to do with a marked file when an event arrives.
    public enum Decision: Hashable, Sendable {
        /// Still the untouched placeholder: write the whole content in, then allow.
        case fill
        /// Already complete, or changed by someone else since (truncated, written while no
        /// daemon listened): allow without touching it, whatever its content.
        case leave
    }

    /// Decides from the file as it is now, never from the event alone: after `echo new > f`
    /// has truncated a file, a fill would land under the new content. `notDownloaded` is what
    /// the daemon knows (journal) of the path; `currentSize` comes from `fstat` of the event's file.
    public static func decide(notDownloaded: Bool, currentSize: Int64, expectedSize: Int64) -> Decision {
        notDownloaded && currentSize == expectedSize ? .fill : .leave
    }

    /// Writes `cloud`'s content into `file` (an event's descriptor: its writes raise no
    /// events), from offset 0, then restores `expected.mtime`, syncs, and sets `state`
    /// (an attribute name and value). Throws `CopyError.sourceChanged` when the cloud file is
    /// not `expected` (size, mtime) or changed while it was read; the partial content is then
    /// punched out again, so the file is a placeholder as before. `path` names the file in errors.
    public static func fill(_ file: FileDescriptor, from cloud: FileDescriptor, expected: FileMetadata,
                            path: RelativePath, state: (name: String, value: [UInt8])?,
                            progress: (Int64) throws -> Void = { _ in }) throws {
        let before = try attributing("fstat", path.shown) { try Sys.fstat(cloud.rawValue) }
        guard FileMetadata(before).size == expected.size, FileMetadata(before).mtime == expected.mtime else {
            throw CopyError.sourceChanged(path)
        }
        do {
            let transfer = ContentTransfer(input: cloud, output: file, source: path, temporary: path)
            // `before` has the expected size (checked above). The writes move the mtime until
            // it is restored below; a fill cut short is recognised at the next start
            // (`undoInterruptedFill`).
            let copied = try transfer.run(status: before, progress: progress)
            let after = try attributing("fstat", path.shown) { try Sys.fstat(cloud.rawValue) }
            guard copied == expected.size, after.isUnchanged(since: before) else { throw CopyError.sourceChanged(path) }
            try attributing("write", path.shown) {
                try file.setModificationTime(expected.mtime)
                try file.sync()
            }
        } catch {
            try? Sys.punchHole(file.rawValue, 0, punchLength(expected.size))
            // The writes and the punch moved the mtime: the placeholder as it was, not an edit.
            try? file.setModificationTime(expected.mtime)
            throw error
        }
        if let state { try setAttribute(state, of: file, path: path) }
    }

    /// Evicts in place: frees the content of `file` (open on a downloaded file, its mark
    /// already placed so that nobody reads the holes), keeping size and mtime, then sets
    /// `state`. The caller has checked that nobody else has the file open: a descriptor
    /// opened before the mark raises no events and would read zeros.
    public static func punchOut(_ file: FileDescriptor, path: RelativePath,
                                state: (name: String, value: [UInt8])?) throws {
        let metadata = try attributing("fstat", path.shown) { try file.metadata() }
        try attributing("punch", path.shown) {
            if metadata.size > 0 { try Sys.punchHole(file.rawValue, 0, punchLength(metadata.size)) }
            try file.setModificationTime(metadata.mtime)  // punching moved it
            try file.sync()
        }
        if let state { try setAttribute(state, of: file, path: path) }
    }

    /// The length to punch for a file of `size`: up to a 64 KiB boundary past its end (the
    /// size is kept), because a block only partly inside the range is zeroed, not freed, and
    /// a small file's only block would stay allocated.
    static func punchLength(_ size: Int64) -> Int64 { (max(size, 1) + 0xFFFF) & ~0xFFFF }

    /// Sets an attribute through a descriptor. `user.*` attributes need write permission
    /// even for the owner: a read-only file is made writable for the owner for that moment
    /// (a chmod moves only the ctime).
    static func setAttribute(_ attribute: (name: String, value: [UInt8]), of file: FileDescriptor,
                             path: RelativePath) throws {
        try attributing("setxattr", path.shown) {
            let set = { try attribute.value.withUnsafeBytes { try Sys.fsetxattr(file.rawValue, attribute.name, $0) } }
            do {
                try set()
            } catch let error as Errno where error == .permissionDenied {
                let mode = try file.metadata().mode
                try file.setPermissions(mode | 0o200)
                defer { try? file.setPermissions(mode) }
                try set()
            }
        }
    }
}

extension FileDescriptor {
    /// Bytes the file occupies on disk (`st_blocks` × 512): about 0 for a placeholder.
    public func allocatedBytes() throws -> Int64 { Int64(try Sys.fstat(rawValue).st_blocks) * 512 }
}
