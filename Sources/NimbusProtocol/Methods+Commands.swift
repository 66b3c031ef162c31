/// Parameters and results of the methods that act: conflicts and versions, commands,
/// leases (PROTOCOL.md). The query methods are in Methods.swift and Methods+Entries.swift.

// MARK: - Conflicts and versions

public struct ConflictInfo: Codable, Sendable, Hashable {
    public var path: String
    public var pathBytes: String?
    public var conflictCopy: String
    public var conflictCopyBytes: String?
    public init(path: WirePath, conflictCopy: WirePath) {
        (self.path, self.pathBytes) = path.fields
        (self.conflictCopy, self.conflictCopyBytes) = conflictCopy.fields
    }
}

public struct ConflictsResult: Codable, Sendable, Equatable {
    public var conflicts: [ConflictInfo]
    public init(conflicts: [ConflictInfo]) { self.conflicts = conflicts }
}

/// `keep`: local (this device's version takes the name), cloud (the cloud's version stays,
/// the conflict copy goes to the versions store), both (the conflict copy stays a file).
public struct ResolveParams: Codable, Sendable, Equatable {
    public var path: String?
    public var pathBytes: String?
    public var keep: String
    public init(path: WirePath, keep: String) {
        (self.path, self.pathBytes) = path.fields
        self.keep = keep
    }
}

public struct ResolveResult: Codable, Sendable, Equatable {
    public var path: String
    public var pathBytes: String?
    public var kept: String
    public init(path: WirePath, kept: String) {
        (self.path, self.pathBytes) = path.fields
        self.kept = kept
    }
}

public struct VersionInfo: Codable, Sendable, Hashable {
    /// Give it to `restore` as `version`.
    public var id: String
    public var size: Int64
    /// The version's own modification time (when its content was written).
    public var mtime: String
    public var mtimeNs: Int64
    /// With `all`: the file it is a version of.
    public var path: String?
    public var pathBytes: String?
    public init(id: String, size: Int64, mtimeNs: Int64, path: WirePath? = nil) {
        self.id = id
        self.size = size
        self.mtime = WireTime.rfc3339(nanoseconds: mtimeNs)
        self.mtimeNs = mtimeNs
        (self.path, self.pathBytes) = path?.fields ?? (nil, nil)
    }
}

/// `versions`: `path` (a file), or with `all` every version kept, of every file at or below
/// `path` (default the whole folder).
public struct VersionsParams: Codable, Sendable, Equatable {
    public var path: String?
    public var pathBytes: String?
    public var all: Bool?
    public init(path: WirePath?, all: Bool? = nil) {
        (self.path, self.pathBytes) = path?.fields ?? (nil, nil)
        self.all = all
    }
}

/// `prune`: what the retention schedule and size limit removed now, and what is left.
public struct PruneResult: Codable, Sendable, Equatable {
    public var removed: Int
    public var removedBytes: Int64
    public var versionsCount: Int
    public var versionsBytes: Int64
    public init(removed: Int, removedBytes: Int64, versionsCount: Int, versionsBytes: Int64) {
        self.removed = removed
        self.removedBytes = removedBytes
        self.versionsCount = versionsCount
        self.versionsBytes = versionsBytes
    }
}

public struct VersionsResult: Codable, Sendable, Equatable {
    public var path: String
    public var pathBytes: String?
    /// Newest first.
    public var versions: [VersionInfo]
    public init(path: WirePath, versions: [VersionInfo]) {
        (self.path, self.pathBytes) = path.fields
        self.versions = versions
    }
}

public struct RestoreParams: Codable, Sendable, Equatable {
    public var path: String?
    public var pathBytes: String?
    /// A `VersionInfo.id`; default the newest version.
    public var version: String?
    /// Where to put it; default `path` itself (what is there is kept as a version first).
    public var to: String?
    public var toBytes: String?
    /// As of this time (wall ns): each file's content at that time, from the version that
    /// replaced it first after it. Default: the newest version.
    public var atNs: Int64?
    /// Only say what would be restored (`files`); change nothing.
    public var dryRun: Bool?
    public init(path: WirePath, version: String? = nil, to: WirePath? = nil, atNs: Int64? = nil, dryRun: Bool? = nil) {
        (self.path, self.pathBytes) = path.fields
        self.version = version
        (self.to, self.toBytes) = to?.fields ?? (nil, nil)
        self.atNs = atNs
        self.dryRun = dryRun
    }
}

public struct RestoreResult: Codable, Sendable, Equatable {
    public var path: String
    public var pathBytes: String?
    public var version: String
    public var restoredTo: String
    public var restoredToBytes: String?
    /// Every file restored (or, with `dryRun`, that would be): one for a file, each file of
    /// a folder.
    public var files: [RestoredFile]
    public var dryRun: Bool
    public init(path: WirePath, version: String, restoredTo: WirePath, files: [RestoredFile], dryRun: Bool) {
        (self.path, self.pathBytes) = path.fields
        self.version = version
        (self.restoredTo, self.restoredToBytes) = restoredTo.fields
        self.files = files
        self.dryRun = dryRun
    }
}

public struct RestoredFile: Codable, Sendable, Hashable {
    public var path: String
    public var pathBytes: String?
    public var version: String
    public var size: Int64
    public var restoredTo: String
    public var restoredToBytes: String?
    public init(path: WirePath, version: String, size: Int64, restoredTo: WirePath) {
        (self.path, self.pathBytes) = path.fields
        self.version = version
        self.size = size
        (self.restoredTo, self.restoredToBytes) = restoredTo.fields
    }
}

// MARK: - Commands

public struct PauseResult: Codable, Sendable, Equatable {
    public var paused: Bool
    public init(paused: Bool) { self.paused = paused }
}

public struct RescanResult: Codable, Sendable, Equatable {
    /// Entries in sync after the rescan.
    public var tracked: Int
    public init(tracked: Int) { self.tracked = tracked }
}

public struct DeletesResult: Codable, Sendable, Equatable {
    /// Held deletions applied (confirmDeletes), or deletions undone (revertDeletes: the held
    /// ones and those of the same mass deletion applied before the guard held the rest).
    public var count: Int
    public init(count: Int) { self.count = count }
}

public struct WatchParams: Codable, Sendable, Equatable {
    /// Also send `progress` notifications. Default true.
    public var progress: Bool?
    public init(progress: Bool? = nil) { self.progress = progress }
}

public struct WatchResult: Codable, Sendable, Equatable {
    public var watching: Bool
    public init(watching: Bool) { self.watching = watching }
}

public struct ReloadResult: Codable, Sendable, Equatable {
    /// Settings now in effect with a new value (config keys as `section.key`).
    public var changed: [String]
    /// Settings that changed in the file but take effect only after a restart.
    public var needsRestart: [String]
    public init(changed: [String], needsRestart: [String]) {
        self.changed = changed
        self.needsRestart = needsRestart
    }
}

// MARK: - Leases

/// `mode`: shared (readers; any number at once) or exclusive (one writer, nothing else on
/// the path, above it or below it).
public struct AcquireParams: Codable, Sendable, Equatable {
    public var path: String?
    public var pathBytes: String?
    public var mode: String
    /// Give up with `busy` after this long; 0 = only if free now; absent = wait as long as
    /// the connection stays open.
    public var timeoutSeconds: Double?
    public init(path: WirePath, mode: String, timeoutSeconds: Double? = nil) {
        (self.path, self.pathBytes) = path.fields
        self.mode = mode
        self.timeoutSeconds = timeoutSeconds
    }
}

public struct AcquireResult: Codable, Sendable, Equatable {
    public var lease: UInt64
    public var path: String
    public var pathBytes: String?
    public var mode: String
    public init(lease: UInt64, path: WirePath, mode: String) {
        self.lease = lease
        (self.path, self.pathBytes) = path.fields
        self.mode = mode
    }
}

public struct ReleaseParams: Codable, Sendable, Equatable {
    public var lease: UInt64
    public init(lease: UInt64) { self.lease = lease }
}

public struct ReleaseResult: Codable, Sendable, Equatable {
    public var released: UInt64
    public init(released: UInt64) { self.released = released }
}

/// One lease or waiting request in the lock table. `state`: granted or waiting.
public struct LeaseInfo: Codable, Sendable, Hashable {
    public var lease: UInt64
    public var path: String
    public var pathBytes: String?
    public var mode: String
    public var state: String
    /// The connection holding it (see `mine`); absent for the daemon's own locks.
    public var owner: UInt64?
    /// Held by the connection that asked.
    public var mine: Bool
    public init(lease: UInt64, path: WirePath, mode: String, state: String, owner: UInt64?, mine: Bool) {
        self.lease = lease
        (self.path, self.pathBytes) = path.fields
        self.mode = mode
        self.state = state
        self.owner = owner
        self.mine = mine
    }
}

public struct LocksResult: Codable, Sendable, Equatable {
    public var locks: [LeaseInfo]
    public init(locks: [LeaseInfo]) { self.locks = locks }
}
