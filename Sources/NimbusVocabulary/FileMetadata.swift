public enum FileKind: UInt8, Sendable, Hashable, Codable, CustomStringConvertible {
    case file = 1, directory = 2, symlink = 3
    /// FIFOs, sockets, devices: never synced.
    case special = 4

    public var description: String {
        switch self {
        case .file: "file"
        case .directory: "directory"
        case .symlink: "symlink"
        case .special: "special file"
        }
    }
}

/// What `lstat` says about one entry, plus a symlink's target (read separately).
/// `mtime` is nanoseconds since the epoch; `mode` holds the permission bits only.
public struct FileMetadata: Hashable, Sendable {
    // Eight-byte fields first, the small ones last: no padding between them (the index
    // holds two of these per synced path).
    public var size: Int64
    public var mtime: Int64
    public var inode: UInt64
    public var device: UInt64
    public var symlinkTarget: [UInt8]?
    public var mode: UInt32
    public var kind: FileKind

    public init(kind: FileKind, size: Int64, mtime: Int64, mode: UInt32, inode: UInt64 = 0,
                device: UInt64 = 0, symlinkTarget: [UInt8]? = nil) {
        self.kind = kind
        self.size = size
        self.mtime = mtime
        self.mode = mode
        self.inode = inode
        self.device = device
        self.symlinkTarget = symlinkTarget
    }

    /// Same content and attributes as far as metadata can tell (kind, size, mtime, mode, link
    /// target), ignoring the inode and device, which differ between the two sides by nature.
    public func looksLike(_ other: FileMetadata) -> Bool {
        kind == other.kind && mode == other.mode && symlinkTarget == other.symlinkTarget
            && (kind == .directory || (size == other.size && mtime == other.mtime))
    }

    /// Same entry on the same side, unchanged: `looksLike` plus the same inode.
    public func isUnchanged(from other: FileMetadata) -> Bool {
        looksLike(other) && inode == other.inode
    }
}
