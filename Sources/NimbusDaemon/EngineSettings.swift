import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// What the engine needs from the configuration (DESIGN §3, §4, §8).
public struct EngineSettings: Sendable {
    /// Names conflict copies and versions: "conflict from DEVICE".
    public var deviceName: String
    /// Mass-delete guard: hold a batch that deletes more than this share of the tracked
    /// entries on one side *and* more than `massDeleteMinimum` entries.
    public var maxDeletePercent: Int = 50
    public var massDeleteMinimum: Int = 100
    /// How long replaced and deleted cloud content stays in `.nimbus/versions`.
    public var versionRetention: Int64 = 30 * 86_400 * 1_000_000_000
    /// The versions store's size limit (`[versions] max-size`); the oldest go first. Nil: none.
    public var versionsMaxBytes: Int64?
    /// Local ignore rules; ignored paths stay `local` and are never synced.
    public var isIgnored: @Sendable (RelativePath, _ isDirectory: Bool) -> Bool = { _, _ in false }
    /// Offset of local time from UTC, for conflict names.
    public var utcOffsetSeconds: Int = 0
    /// A plan with at least this many copies is written as one batch with one flush of each
    /// filesystem instead of an fsync per file.
    public var batchThreshold: Int = 16
    /// New cloud files appear as placeholders instead of being downloaded (DESIGN §5).
    public var onDemand = false
    /// How placeholders are written (DESIGN §5). Only `.suffix` is carried out by the
    /// executor so far; `.realName` is refused with a clear error until it is.
    public var placeholderStyle: PlaceholderStyle = .suffix
    /// Automatic downloads (opening a placeholder, the cache) leave this many bytes free.
    public var minFreeSpace: Int64 = 1 << 30
    /// Bytes of downloaded, unpinned files to keep, and how long an unopened file stays.
    public var cacheLimit: Int64?
    public var evictAfter: Int64?

    public init(deviceName: String) { self.deviceName = deviceName }
}

/// What the engine is doing, for status, logs and systemd.
public enum EnginePhase: Hashable, Sendable {
    case starting
    case idle
    case syncing
    case paused
    /// A root is missing or not ours: nothing is propagated until it is back.
    case halted(String)
}

/// The engine's published state: read by the control server and status reporters from
/// other threads, always under the engine's lock.
public struct EngineStatus: Sendable {
    public var phase: EnginePhase = .starting
    public var tracked = 0
    /// Deletions held by the mass-delete guard, waiting for confirm or revert.
    public var heldDeletes = 0
    public var bytesCopied: Int64 = 0
    public var filesCopied = 0
    public var lastError: String?
    /// The versions store as last counted (at start, after each prune) plus what was added
    /// since: how many versions, and their bytes.
    public var versionsCount = 0
    public var versionsBytes: Int64 = 0
    /// What the cloud folder's filesystem supports, once probed (at pairing).
    public var cloudCapabilities: FilesystemCapabilities?
    /// How the cloud folder is written, chosen from `cloudCapabilities`.
    public var cloudWriteProtocol: WriteProtocol = .local
}
