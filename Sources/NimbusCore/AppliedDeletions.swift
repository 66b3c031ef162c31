import NimbusVocabulary

/// Where the content of an entry that a sync deleted is kept while the mass-delete guard may
/// still ask for it back (DESIGN §3).
public enum KeptContent: Sendable, Hashable {
    /// A local file (or symlink), moved into the local folder's holding place at `at`.
    case localFile(at: RelativePath)
    /// A cloud file, moved into the versions store at `at` (`size` bytes, for its count).
    case cloudVersion(at: RelativePath, size: Int64)
    /// A folder: brought back empty with its mode; its content is kept entry by entry.
    case folder(mode: UInt32)
    /// Nothing could be kept (a placeholder has no content of its own).
    case nothing
}

/// One deletion a sync applied, and where what it removed is kept.
public struct AppliedDeletion: Sendable, Hashable {
    public var path: RelativePath
    public var side: Side
    public var at: MonotonicInstant
    public var kept: KeptContent

    public init(path: RelativePath, side: Side, at: MonotonicInstant, kept: KeptContent) {
        self.path = path
        self.side = side
        self.at = at
        self.kept = kept
    }
}

/// The deletions applied within the mass-delete guard's window, per side. They count toward
/// the guard, so an `rm` split over several passes is still caught, and they are what
/// `revert-deletes` brings back besides the held ones: a mass deletion is undone as a whole,
/// including the part applied before the guard tripped.
///
/// On a side with deletions held, none of them expires: the user has not decided yet, and
/// whatever was deleted there since the window before the guard tripped belongs to what they
/// will decide on. Elsewhere each expires `window` after it was applied, and its kept content
/// is then let go.
public struct AppliedDeletions: Sendable {
    public private(set) var entries: [AppliedDeletion] = []

    public init() {}

    public mutating func append(_ deletion: AppliedDeletion) { entries.append(deletion) }

    /// How many were applied on each side.
    public var counts: [Side: Int] {
        entries.reduce(into: [.local: 0, .cloud: 0]) { $0[$1.side, default: 0] += 1 }
    }

    /// Removes and returns those applied `window` or longer before `now`, except on the sides in `holding`.
    public mutating func expire(now: MonotonicInstant, window: Duration, holding: Set<Side>) -> [AppliedDeletion] {
        let since = now - window
        return take { $0.at <= since && !holding.contains($0.side) }
    }

    /// How many on `side` can be brought back (all but those that kept nothing).
    public func restorable(on side: Side) -> Int {
        entries.count { $0.side == side && $0.kept != .nothing }
    }

    /// When the next kept local file expires, on a side with nothing held: the time to let it
    /// go, so that it does not linger until a later pass.
    public func nextRelease(window: Duration, holding: Set<Side>) -> MonotonicInstant? {
        entries.filter { !holding.contains($0.side) && $0.kept.isLocalFile }.map(\.at).min().map { $0 + window }
    }

    /// Removes and returns those on `sides`.
    public mutating func take(on sides: Set<Side>) -> [AppliedDeletion] {
        take { sides.contains($0.side) }
    }

    /// Forgets those whose content is kept at `place` (a later deletion of the same path took it).
    public mutating func forget(keptAt place: KeptContent) {
        entries.removeAll { $0.kept == place }
    }

    private mutating func take(where chosen: (AppliedDeletion) -> Bool) -> [AppliedDeletion] {
        let taken = entries.filter(chosen)
        entries.removeAll(where: chosen)
        return taken
    }

    /// The order in which to bring deletions back: folders first, outermost first (so each
    /// file's folder is there, with its mode), then the files. A path deleted twice comes back
    /// once, as its latest deletion kept it.
    public static func restoreOrder(_ deletions: [AppliedDeletion]) -> [AppliedDeletion] {
        var latest: [RelativePath: AppliedDeletion] = [:]
        for deletion in deletions where latest[deletion.path].map({ $0.at <= deletion.at }) ?? true {
            latest[deletion.path] = deletion
        }
        return latest.values.sorted { a, b in
            let (aFolder, bFolder) = (a.kept.isFolder, b.kept.isFolder)
            if aFolder != bFolder { return aFolder }
            return a.path.depth != b.path.depth ? a.path.depth < b.path.depth : a.path < b.path
        }
    }
}

extension KeptContent {
    public var isFolder: Bool {
        if case .folder = self { return true }
        return false
    }

    public var isLocalFile: Bool {
        if case .localFile = self { return true }
        return false
    }
}
