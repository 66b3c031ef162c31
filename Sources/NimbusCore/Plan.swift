import NimbusVocabulary

/// One step of a plan. Every destructive step carries what the plan expects to find, so the
/// executor re-checks it first and refuses ("changed since planned") instead of destroying a
/// change it has not seen.
public enum Action: Hashable, Sendable {
    /// Propagate a rename: move `from` to `to` on `side` (which must still be `expected`).
    case rename(from: RelativePath, to: RelativePath, on: Side, expected: FileMetadata)
    /// Move the losing version of a conflict out of the way, keeping it under a new name.
    case preserveConflict(RelativePath, as: RelativePath, on: Side, expected: FileMetadata)
    /// Delete a file or symlink on `side` (the cloud side keeps it in the versions store).
    case remove(RelativePath, on: Side, expected: FileMetadata)
    /// Delete an empty directory on `side`.
    case removeDirectory(RelativePath, on: Side, expected: FileMetadata)
    case makeDirectory(RelativePath, on: Side, source: FileMetadata)
    /// Copy a regular file's content from the other side to `to`, replacing `replacing`
    /// (nil: the path must not exist).
    case copy(RelativePath, to: Side, source: FileMetadata, replacing: FileMetadata?)
    case makeSymlink(RelativePath, on: Side, source: FileMetadata, replacing: FileMetadata?)
    /// Only the permission bits differ (for a symlink: its modification time): apply
    /// `source`'s on `side`.
    case setMode(RelativePath, on: Side, source: FileMetadata, expected: FileMetadata)
    /// Both sides already agree: record them as the new base.
    case record(RelativePath, local: FileMetadata, cloud: FileMetadata, hash: ContentHash?)
    /// Both sides deleted the path: forget it.
    case forget(RelativePath)
    /// Both sides made the same rename: move the base of `from` (and below) to `to`.
    case rebase(from: RelativePath, to: RelativePath)
    /// Write (or rewrite) the local placeholder of the cloud file `source` at `path`
    /// (DESIGN §5), replacing the placeholder file `replacing` (nil: there is none).
    case writePlaceholder(RelativePath, source: FileMetadata, replacing: FileMetadata?)
    /// Delete the local placeholder of `path`, which must still be `expected`.
    case removePlaceholder(RelativePath, expected: FileMetadata)
    /// Propagate a cloud rename to the placeholder of `from`.
    case renamePlaceholder(from: RelativePath, to: RelativePath, expected: FileMetadata)

    // Repairs planned by `foldPlaceholders` before a pass reconciles: the paths they touch
    // are left out of that pass and looked at again once the repair is done.

    /// Rename the placeholder file `from` to `to` (its suffix restored, or moved off a name
    /// another file holds); its record follows at the next pass, by the inode.
    case movePlaceholder(from: RelativePath, to: RelativePath, expected: FileMetadata)
    /// Remove the placeholder file `file`, which stands for nothing any more (a real file
    /// beside it, or its file gone from the cloud). If it no longer holds a placeholder's
    /// text it is someone's content: it is kept under a conflict name instead. A real-name
    /// placeholder a blocked switch to the suffix style left (`file` is the path it stands
    /// for) is known by the journal instead, and goes with its record.
    case retirePlaceholder(file: RelativePath, expected: FileMetadata)
    /// Someone wrote into `file`, the placeholder of `path` (now `edited`): what they wrote is
    /// kept under a conflict name and a fresh placeholder of `cloud` is put back, in one step.
    case repairPlaceholder(RelativePath, file: RelativePath, edited: FileMetadata, cloud: FileMetadata)
    /// Journal the placeholder `placeholder` found for `path` (an eviction stopped before the
    /// journal said so) as standing for the cloud file `cloud`.
    case adoptPlaceholder(RelativePath, placeholder: FileMetadata, cloud: FileMetadata)
    /// The journal says placeholder but the real file `local` is at `path` (a download that
    /// completed just before a crash, or the user's): it replaces the placeholder in the
    /// record, in sync when it holds the content of the cloud's `cloud`, else a change here.
    case adoptLocalFile(RelativePath, local: FileMetadata, cloud: FileMetadata?)
    /// Rewrite the placeholder of `path` (now `expected`, standing for `cloud`) in the style
    /// `to`, without downloading: the new one is written first, then the old one removed
    /// (`planPlaceholderConversion`).
    case convertPlaceholder(RelativePath, to: PlaceholderStyle, expected: FileMetadata, cloud: FileMetadata)
    /// Replace the downloaded file `path` (still `expected`, in sync with `cloud`) by its
    /// placeholder, the local copy removed only once the placeholder stands (`planEviction`).
    case evict(RelativePath, expected: FileMetadata, cloud: FileMetadata)

    /// The path whose base this action settles.
    public var path: RelativePath {
        switch self {
        case .rename(_, let to, _, _), .rebase(_, let to), .renamePlaceholder(_, let to, _), .movePlaceholder(_, let to, _): to
        case .preserveConflict(let p, _, _, _), .remove(let p, _, _), .removeDirectory(let p, _, _),
             .makeDirectory(let p, _, _), .copy(let p, _, _, _), .makeSymlink(let p, _, _, _),
             .setMode(let p, _, _, _), .record(let p, _, _, _), .forget(let p),
             .writePlaceholder(let p, _, _), .removePlaceholder(let p, _), .retirePlaceholder(let p, _),
             .repairPlaceholder(let p, _, _, _), .adoptPlaceholder(let p, _, _), .adoptLocalFile(let p, _, _),
             .convertPlaceholder(let p, _, _, _), .evict(let p, _, _): p
        }
    }

    /// The side this action writes to (nil for journal-only actions).
    public var side: Side? {
        switch self {
        case .rename(_, _, let s, _), .preserveConflict(_, _, let s, _), .remove(_, let s, _),
             .removeDirectory(_, let s, _), .makeDirectory(_, let s, _), .copy(_, let s, _, _),
             .makeSymlink(_, let s, _, _), .setMode(_, let s, _, _): s
        case .writePlaceholder, .removePlaceholder, .renamePlaceholder, .movePlaceholder, .retirePlaceholder, .repairPlaceholder,
             .convertPlaceholder, .evict: .local
        case .record, .forget, .rebase, .adoptPlaceholder, .adoptLocalFile: nil
        }
    }

    public var isDeletion: Bool {
        switch self {
        case .remove, .removeDirectory, .removePlaceholder: true
        default: false
        }
    }
}

/// What reconcile decided for a set of paths. Actions are in a safe execution order:
/// renames and conflict moves, then deletions (children before parents), then creations
/// and updates (parents before children), then journal-only records.
public struct Plan: Hashable, Sendable {
    public var actions: [Action] = []
    /// Paths where both sides changed to different content; one version was preserved under
    /// `conflictCopy` and the other keeps the name (see `Conflict.nameKeptBy`).
    public var conflicts: [Conflict] = []
    /// Files whose content must be hashed before "same content?" can be decided; the caller
    /// hashes them (at these paths, which are where the files are now) and reconciles again.
    public var needsHashes: Set<SidePath> = []
    /// Special files (fifos, sockets, devices) that are never synced.
    public var skipped: [RelativePath] = []

    public init() {}

    public var isEmpty: Bool { actions.isEmpty && needsHashes.isEmpty }

    public func deletions(on side: Side) -> [Action] {
        actions.filter { $0.isDeletion && $0.side == side }
    }
}

public struct Conflict: Hashable, Sendable, CustomStringConvertible {
    public var path: RelativePath
    public var conflictCopy: RelativePath
    /// The side whose version keeps the name: the cloud's, except where this device has a
    /// folder (a folder always keeps its name).
    public var nameKeptBy: Side
    /// The kinds of the two versions, for saying what happened.
    public var kinds: (local: FileKind, cloud: FileKind)

    public init(path: RelativePath, conflictCopy: RelativePath, nameKeptBy: Side = .cloud,
                kinds: (local: FileKind, cloud: FileKind) = (.file, .file)) {
        self.path = path
        self.conflictCopy = conflictCopy
        self.nameKeptBy = nameKeptBy
        self.kinds = kinds
    }

    /// What happened, for the log: which version kept the name and which became the copy.
    public var description: String {
        func version(_ side: Side) -> String {
            let kind = side == .local ? kinds.local : kinds.cloud
            let what = kinds.local == kinds.cloud ? "version" : "\(kind)"
            return side == .local ? "this device's \(what)" : "the cloud's \(what)"
        }
        let change = kinds.local == kinds.cloud ? "both sides changed it"
                                                : "a \(kinds.local) here and a \(kinds.cloud) in the cloud"
        return "conflict on \(path): \(change); \(version(nameKeptBy)) keeps the name, "
            + "\(version(nameKeptBy.other)) is kept as \(conflictCopy)"
    }

    public static func == (a: Conflict, b: Conflict) -> Bool {
        a.path == b.path && a.conflictCopy == b.conflictCopy && a.nameKeptBy == b.nameKeptBy
            && a.kinds.local == b.kinds.local && a.kinds.cloud == b.kinds.cloud
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(path)
        hasher.combine(conflictCopy)
        hasher.combine(nameKeptBy)
        hasher.combine(kinds.local)
        hasher.combine(kinds.cloud)
    }
}

/// A path on one side.
public struct SidePath: Hashable, Sendable, CustomStringConvertible {
    public var side: Side
    public var path: RelativePath
    public init(_ side: Side, _ path: RelativePath) {
        self.side = side
        self.path = path
    }
    public var description: String { "\(side):\(path)" }
}
