import NimbusCore

/// The methods of the control protocol (DESIGN §7). PROTOCOL.md documents each with an
/// example; its field tables are the contract for scripts.
public enum ControlMethod: String, CaseIterable, Sendable, Codable {
    case hello, status, list, stat, download, evict, pin, unpin, conflicts, resolve, versions, restore, prune
    case pause, resume, rescan, confirmDeletes, revertDeletes, watch, locks, reload, acquire, release
}

extension ControlMethod {
    /// The names of the parameters the method takes (members of `params`); any other name is
    /// refused with `invalid_params`, so a typo (`paths` for `path`) is never silently ignored.
    public var parameterNames: [String] {
        let path = ["path", "pathBytes"]
        switch self {
        case .hello: return ["versions", "client"]
        case .list: return path + ["recursive", "state", "limit", "cursor"]
        case .stat, .evict, .pin, .unpin: return path
        case .versions: return path + ["all"]
        case .download: return path + ["wait"]
        case .resolve: return path + ["keep"]
        case .restore: return path + ["version", "to", "toBytes", "atNs", "dryRun"]
        case .watch: return ["progress"]
        case .acquire: return path + ["mode", "timeoutSeconds"]
        case .release: return ["lease"]
        case .status, .conflicts, .pause, .resume, .rescan, .confirmDeletes, .revertDeletes, .locks, .reload, .prune: return []
        }
    }
}

/// Protocol versions. `hello` picks the highest version both sides support. Adding fields
/// or methods does not change the version; removing or changing the meaning of one does.
public enum ProtocolVersion {
    public static let current = 1
    public static let supported = [1]
}

/// Longest line either side may send, without its newline.
public let maximumLineLength = 1 << 20

// MARK: - hello

public struct HelloParams: Codable, Sendable, Equatable {
    /// Protocol versions the client speaks.
    public var versions: [Int]
    /// Free text for the daemon's log, e.g. "nimbusctl 0.1.0".
    public var client: String?
    public init(versions: [Int] = ProtocolVersion.supported, client: String? = nil) {
        self.versions = versions
        self.client = client
    }
}

public struct HelloResult: Codable, Sendable, Equatable {
    /// The chosen protocol version.
    public var version: Int
    public var daemonVersion: String
    public var instance: String
    public var localRoot: String
    public var cloudRoot: String
    public var deviceName: String
    public var pid: Int32
    public init(version: Int, daemonVersion: String, instance: String, localRoot: String, cloudRoot: String,
                deviceName: String, pid: Int32) {
        self.version = version
        self.daemonVersion = daemonVersion
        self.instance = instance
        self.localRoot = localRoot
        self.cloudRoot = cloudRoot
        self.deviceName = deviceName
        self.pid = pid
    }
}

// MARK: - status

/// `phase` names: starting, idle, syncing, paused, halted.
public struct StatusResult: Codable, Sendable, Equatable {
    public var phase: String
    /// Why sync is halted (a folder is missing); absent otherwise.
    public var reason: String?
    public var paused: Bool
    /// Entries in sync (journal records).
    public var tracked: Int
    /// Deletions held by the mass-delete guard; confirmDeletes or revertDeletes decides.
    public var heldDeletes: Int
    /// While deletions are held: those the same mass deletion applied before the guard held
    /// the rest, whose content is kept; revertDeletes brings them back too. Absent otherwise.
    public var keptDeletes: Int?
    public var conflicts: Int
    public var bytesCopied: Int64
    public var filesCopied: Int
    /// The last sync error since start, if any.
    public var lastError: String?
    /// While the journal cannot be written: why. Sync goes on, but nothing is recorded.
    public var journalError: String?
    /// Paths whose last operation failed and is being retried (state `error`) now.
    public var errors: Int?
    /// The versions store (`<cloud>/.nimbus/versions`): how many versions and their bytes.
    public var versionsCount: Int?
    public var versionsBytes: Int64?
    public var instance: String
    public var localRoot: String
    public var cloudRoot: String
    public var deviceName: String
    public var daemonVersion: String
    public var startedAt: String
    public var startedAtNs: Int64
    /// Control connections open now, this one included.
    public var clients: Int
    /// How files kept only in the cloud stand locally: `suffix` (`NAME.nimbus`) or
    /// `real-name` (the file itself, fetched when opened), and why that style.
    public var placeholderStyle: String?
    public var placeholderStyleReason: String?
    /// What the cloud folder's filesystem supports and how it is written; absent until probed.
    public var cloudFilesystem: CloudFilesystem?
    public init(phase: String, reason: String?, paused: Bool, tracked: Int, heldDeletes: Int, conflicts: Int,
                bytesCopied: Int64, filesCopied: Int, lastError: String?, instance: String, localRoot: String,
                cloudRoot: String, deviceName: String, daemonVersion: String, startedAtNs: Int64, clients: Int,
                errors: Int = 0, versionsCount: Int = 0, versionsBytes: Int64 = 0,
                placeholderStyle: String? = nil, placeholderStyleReason: String? = nil,
                cloudFilesystem: CloudFilesystem? = nil, keptDeletes: Int? = nil, journalError: String? = nil) {
        self.journalError = journalError
        self.cloudFilesystem = cloudFilesystem
        self.keptDeletes = keptDeletes
        self.phase = phase
        self.reason = reason
        self.paused = paused
        self.tracked = tracked
        self.heldDeletes = heldDeletes
        self.conflicts = conflicts
        self.bytesCopied = bytesCopied
        self.filesCopied = filesCopied
        self.lastError = lastError
        self.instance = instance
        self.localRoot = localRoot
        self.cloudRoot = cloudRoot
        self.deviceName = deviceName
        self.daemonVersion = daemonVersion
        self.startedAt = WireTime.rfc3339(nanoseconds: startedAtNs)
        self.startedAtNs = startedAtNs
        self.clients = clients
        self.errors = errors
        self.versionsCount = versionsCount
        self.versionsBytes = versionsBytes
        self.placeholderStyle = placeholderStyle
        self.placeholderStyleReason = placeholderStyleReason
    }

    /// Whether something needs the user: a halted pair, a journal that cannot be written, held
    /// deletions, conflicts, errors, a pause. `nimbusctl status` exits 1 then, 0 when all is in
    /// sync or syncing by itself.
    public var needsAttention: Bool {
        phase == "halted" || journalError != nil || paused || heldDeletes > 0 || conflicts > 0 || (errors ?? 0) > 0
    }
}

/// The cloud folder's filesystem as probed at pairing (DESIGN §3): `type` as statfs names it
/// (`ext4`, `nfs`, `fuse`…), `network` (written by other machines, attributes cached), which
/// safe-write operations it supports, its mtime precision in nanoseconds, and the protocol
/// chosen from them: `replace` (`exchange` or `move-aside`), `create` (`rename-noreplace`,
/// `link` or `open-exclusive`), `verifiesContent`.
public struct CloudFilesystem: Codable, Sendable, Equatable {
    public var type: String
    public var network: Bool
    public var renameNoReplace: Bool
    public var renameExchange: Bool
    public var hardLinks: Bool
    public var xattrs: Bool
    public var mtimePrecisionNs: Int64
    public var replace: String
    public var create: String
    public var verifiesContent: Bool

    public init(type: String, network: Bool, renameNoReplace: Bool, renameExchange: Bool, hardLinks: Bool,
                xattrs: Bool, mtimePrecisionNs: Int64, replace: String, create: String, verifiesContent: Bool) {
        self.type = type
        self.network = network
        self.renameNoReplace = renameNoReplace
        self.renameExchange = renameExchange
        self.hardLinks = hardLinks
        self.xattrs = xattrs
        self.mtimePrecisionNs = mtimePrecisionNs
        self.replace = replace
        self.create = create
        self.verifiesContent = verifiesContent
    }
}
