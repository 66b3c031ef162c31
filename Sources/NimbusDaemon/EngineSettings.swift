import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// What the engine needs: the pair's settings as configured, and what the daemon works out
/// at start (device name, ignore rules, UTC offset, placeholder style) (DESIGN §3, §4, §8).
/// `settings.maxDeletePercent` reads `pair.maxDeletePercent`: the pair's settings are not
/// repeated here.
@dynamicMemberLookup
public struct EngineSettings: Sendable {
    /// Names conflict copies and versions: "conflict from DEVICE".
    public var deviceName: String
    /// The settings from the config file (their defaults are `PairSettings.defaults`).
    public var pair: PairSettings
    /// The mass-delete guard holds a batch only if it deletes more than this many entries
    /// (and more than `maxDeletePercent` of them).
    public var massDeleteMinimum: Int = 100
    /// Local ignore rules; ignored paths stay `local` and are never synced.
    public var isIgnored: @Sendable (RelativePath, _ isDirectory: Bool) -> Bool = { _, _ in false }
    /// Offset of local time from UTC, for conflict names.
    public var utcOffsetSeconds: Int = 0
    /// A plan with at least this many copies is written as one batch with one flush of each
    /// filesystem instead of an fsync per file.
    public var batchThreshold: Int = 16
    /// How many threads prepare the copies of such a batch (issue 15: on two cores, two
    /// threads copy 1 000 small files in 15 ms where one takes 26). 1: the engine thread
    /// prepares them itself, one after the other. The online processors, at most 4.
    public var copyThreads: Int = min(4, ProcessSupport.onlineProcessors)
    /// How placeholders are written (DESIGN §5), decided at start from `[placeholders] style`.
    public var placeholderStyle: PlaceholderStyle = .suffix

    public init(deviceName: String, pair: PairSettings = .defaults) {
        self.deviceName = deviceName
        self.pair = pair
    }

    public subscript<Value>(dynamicMember setting: WritableKeyPath<PairSettings, Value>) -> Value {
        get { pair[keyPath: setting] }
        set { pair[keyPath: setting] = newValue }
    }
}

/// What the engine shows it is doing, for status, logs and systemd: `EngineStatus.phase`
/// composes it from the three records it keeps.
public enum EnginePhase: Hashable, Sendable {
    case starting
    case idle
    case syncing
    case paused
    /// A root is missing or not ours: nothing is propagated until it is back.
    case halted(String)
}

/// What the engine is doing when nothing holds it back.
public enum EngineActivity: Hashable, Sendable {
    case starting, idle, syncing

    var phase: EnginePhase {
        switch self {
        case .starting: .starting
        case .idle: .idle
        case .syncing: .syncing
        }
    }
}

/// The engine's published state: read by the control server and status reporters from
/// other threads, always under the engine's lock.
public struct EngineStatus: Sendable {
    /// The user's pause and the missing root are separate records, each set and cleared by
    /// its own cause: pausing while halted and resuming keeps the halt, and a root that comes
    /// back while paused keeps the pause (one phase holding either used to overwrite the other).
    public var activity = EngineActivity.starting
    /// Paused by the user (`nimbusctl pause`), until resumed: the one record of it.
    public var paused = false
    /// Why a root is missing or not ours; nil while both are there.
    public var haltReason: String?
    /// The phase shown: a halt first (resuming does not end it), then the pause, then what
    /// the engine does.
    public var phase: EnginePhase { haltReason.map(EnginePhase.halted) ?? (paused ? .paused : activity.phase) }
    public var isHalted: Bool { haltReason != nil }
    public var tracked = 0
    /// Deletions held by the mass-delete guard, waiting for confirm or revert.
    public var heldDeletes = 0
    /// Deletions applied on a side with deletions held, within the guard's window before it
    /// tripped or since, whose content is kept: a revert brings them back too.
    public var keptDeletes = 0
    public var bytesCopied: Int64 = 0
    public var filesCopied = 0
    /// The newest failure that lasts (a path in state `error`); nil once none does
    /// (`SyncEngine.forgetLastErrorIfOver`). The log keeps the history.
    public var lastError: String?
    /// Why the journal cannot be written now (nil once a commit succeeds): sync goes on, but
    /// nothing it does is recorded, so the user must hear of it, not only the log.
    public var journalError: String?
    /// The versions store as last counted (at start, after each prune) plus what was added
    /// since: how many versions, and their bytes.
    public var versionsCount = 0
    public var versionsBytes: Int64 = 0
    /// What the cloud folder's filesystem supports, once probed (at pairing).
    public var cloudCapabilities: FilesystemCapabilities?
    /// How the cloud folder is written, chosen from `cloudCapabilities`.
    public var cloudWriteProtocol: WriteProtocol = .local
}
