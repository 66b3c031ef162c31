import NimbusVocabulary

/// What both sides looked like at the last successful sync of a path: the "ancestor" of the
/// three-way comparison (DESIGN §4). Inodes and devices differ between the sides, so each
/// side keeps its own metadata.
public struct BaseEntry: Hashable, Sendable {
    public var local: FileMetadata
    public var cloud: FileMetadata
    /// Content hash of a regular file, when it was computed.
    public var hash: ContentHash?
    /// The file was recorded within a timestamp tick of its last change, so a later write in
    /// that same tick, of the same size, would leave its metadata unchanged ("racily clean"
    /// in git's words). Unchanged metadata is then confirmed by comparing `hash`.
    public var isAmbiguous: Bool

    /// How recent an mtime must be, at recording time, to be ambiguous. Kernel file times
    /// are taken from a coarse clock (a few ms); this leaves a wide margin.
    public static let ambiguityWindow: Duration = .milliseconds(50)

    /// Put in a base's cloud mtime when the cloud file turned out to have been replaced by
    /// another device although its (cached) metadata looked unchanged: no real file has it,
    /// so the next comparison sees a change.
    public static let replacedElsewhereMtime: Int64 = -1

    public init(local: FileMetadata, cloud: FileMetadata, hash: ContentHash? = nil, isAmbiguous: Bool = false) {
        self.local = local
        self.cloud = cloud
        self.hash = hash
        self.isAmbiguous = isAmbiguous && hash != nil
    }

    public var kind: FileKind { local.kind }

    public subscript(side: Side) -> FileMetadata {
        get { side == .local ? local : cloud }
        set { if side == .local { local = newValue } else { cloud = newValue } }
    }
}

/// How one side's current entry differs from its base.
public enum Change: Hashable, Sendable {
    case unchanged
    case created
    case deleted
    /// Content, kind or link target changed.
    case modified
    /// Only the permission bits changed (for a symlink: its modification time).
    case attributes

    public var isChange: Bool { self != .unchanged }

    /// Compares an entry with its base. Update detection may over-report (a touched file
    /// counts as modified): that costs a hash or a copy, never data.
    public static func between(base: FileMetadata?, current: FileMetadata?) -> Change {
        switch (base, current) {
        case (nil, nil): return .unchanged
        case (nil, .some): return .created
        case (.some, nil): return .deleted
        case let (.some(b), .some(c)):
            if b.kind != c.kind || b.symlinkTarget != c.symlinkTarget { return .modified }
            if b.kind == .file && (b.size != c.size || b.mtime != c.mtime || b.inode != c.inode) { return .modified }
            if b.kind == .directory && b.inode != c.inode { return .modified }
            if b.mode != c.mode && b.kind != .symlink { return .attributes }
            // A symlink's own time (`touch -h`) is synced like a mode; a folder's changes with
            // every entry added or removed, and follows its contents instead.
            if b.kind == .symlink && b.mtime != c.mtime { return .attributes }
            return .unchanged
        }
    }
}
