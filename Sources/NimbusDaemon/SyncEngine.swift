import NimbusCore
import NimbusSystem
import NimbusVocabulary
import Synchronization

/// The sync engine for one pair: scans what changed, reconciles it with the journal's base,
/// passes the plan through the safety gate, executes it and records the result (DESIGN §1).
///
/// Who owns what:
/// - The engine thread (`PairRuntime`'s loop, or a test's own thread) is the only caller of
///   the entry points that change files or the journal (`start`, `sync`, `download`, `pin`,
///   `evict`, `resolve`, `restore`, …); others reach them through `PairRuntime.perform`.
///   The `store` is used from that thread only. Debug builds check both (`checkOwner`, at
///   the entry points and wherever a record is written or committed).
/// - `state`, `settingsBox` and the handler boxes are `Mutex`es: the control server, its
///   workers and the hydration workers read the published state through the queries in
///   `SyncEngine+Queries`/`+Control` from any thread; tests read its tables through
///   `SyncEngine+Tables`. Nothing outside the `SyncEngine*.swift` files touches `state`
///   itself (`LayeringTests.nothingOutsideTheEngineTouchesItsState`).
/// - `stopRequested` and the two flags are atomics, set from any thread (a signal handler)
///   and read on the engine thread.
/// - A batch's copies are prepared on worker threads (`SyncEngine+CopyWorkers`) while the
///   engine thread waits for them in plan order: a worker calls `prepare` only, which reaches
///   the filesystems, `heartbeat`, `setTransient` (so `emit`) and `leftoverCopiesPossible`,
///   never the store, the records or an entry point. No worker outlives `execute`.
/// It is `@unchecked Sendable` because the file systems and the store are not `Sendable`;
/// the rules above are what makes sharing it safe.
public final class SyncEngine<FS: FileSystem>: @unchecked Sendable {
    public let local: FS
    public let cloud: FS
    let store: any RecordStore
    let clock: any TimeSource
    let log: Logger
    let rootNames: (local: String, cloud: String)
    let settingsBox: Mutex<EngineSettings>
    let state: Mutex<EngineState>
    let eventHandler = Mutex<Callback<EngineEvent>?>(nil)
    let heartbeatHandler = Mutex<Callback<Void>?>(nil)
    /// A second listener, independent of `onEvent`'s: the desktop notifications.
    let alertHandler = Mutex<Callback<EngineEvent>?>(nil)
    /// Cleared when the local filesystem turns out to keep no user xattrs.
    let attributesSupported = Atomic<Bool>(true)
    /// Set when a local copy failed: its temporary file may have been carried off by a folder
    /// renamed meanwhile, out of reach of its removal by path (see `removeLeftoverCopies`).
    let leftoverCopiesPossible = Atomic<Bool>(false)
    /// The per-path lock table shared with applications' leases (`acquire`/`release`): the
    /// engine takes an exclusive lock for each action and leaves a leased path alone.
    public let locks = PathLocks()
    /// The kernel's hooks behind real-name placeholders (DESIGN §5); nil: none, and the
    /// real-name style cannot be carried out (its actions fail with a clear error).
    let markerBox = Mutex<(any PlaceholderMarker)?>(nil)
    /// Set from any thread (SIGTERM): the pass under way stops between files, at the next
    /// heartbeat, and no new pass starts (see `requestStop`).
    let stopRequested = Atomic<Bool>(false)
    /// The folders the execution under way made writable for its work (`FolderModes`);
    /// engine thread only, boxed so that the engine stays `Sendable` by its rules.
    let folderModes = Mutex(FolderModes())
    /// The thread that owns the engine once `claimOwnership` was called (debug checks only).
    let owner = Atomic<UInt>(0)

    struct EngineState {
        var index: SyncIndex
        var status = EngineStatus()
        /// States that cannot be derived from the index: in progress, errors.
        var transient: [RelativePath: FileState] = [:]
        /// Deletions held by the mass-delete guard.
        var heldDeletes: [Action] = []
        /// Paths to look at again, and when.
        var retries: [RelativePath: MonotonicInstant] = [:]
        var retryCount: [RelativePath: Int] = [:]
        /// The deletions propagated recently, and where their content is kept: the mass-delete
        /// guard counts them too, so an `rm` that arrives in several passes is still caught,
        /// and `revert-deletes` brings them back with the held ones (`SyncEngine+KeptDeletions`).
        var appliedDeletions = AppliedDeletions()
        /// Paths whose deletion, which nothing reported, waited once for the events that
        /// explain it (`holdUnreportedDeletions`).
        var heldDeletions: Set<RelativePath> = []
        /// When the running daemon next sweeps leftover temporaries.
        var nextTemporarySweep = MonotonicInstant.origin
        /// This device's recent uploads to a content-checked cloud: the hash and when.
        var recentUploads: [RelativePath: (hash: ContentHash, at: WallInstant)] = [:]
        /// A local marker was written and the local filesystem not flushed since: the
        /// journal's next commit waits for that flush (`RootMarkers.check`).
        var localMarkerAwaitsFlush = false
        /// The sides where a pass changed names (a rename, a removal, a new folder or symlink,
        /// a placeholder's) or set modes, not flushed since: the next commit flushes them
        /// first, one flush per filesystem for all of them (`SyncEngine.commit`).
        var changesAwaitFlush: Set<Side> = []
        /// A commit failed (the local folder's flush before it, or the journal's write), its
        /// records still held: when it is tried again, and how many tries failed in a row
        /// (`retryCommitIfDue`).
        var heldCommit: (due: MonotonicInstant, failures: Int)?
        /// Files uploaded whose local file is marked after the pass's commit, not inside its
        /// flush window (`writePendingMarks`), and whether each is known to carry no mark yet.
        var pendingMarks: [(path: RelativePath, isUnmarked: Bool)] = []
        /// The first pass leaves its marks for the runtime, which writes them after READY=1.
        var marksWaitForRuntime = false
        /// What this engine changed since its last pass began, whose events are its own
        /// (`SyncEngine+Echoes`).
        var echoes: Set<SidePath> = []
        /// Files this device created in a cloud whose creates are not exclusive on the server,
        /// to read again when due (`checkCreatesDue`): the hash written and which check is next.
        var createChecks: [RelativePath: (hash: ContentHash, due: MonotonicInstant, check: Int)] = [:]
        /// The special files the log told about, so that it does not at every pass (`tellSkipped`).
        var toldSpecialFiles: [RelativePath: ToldSpecialFile] = [:]
        /// The failure last logged for each path, logged again only when it changes or after
        /// the path synced (`handle(_:for:again:)`).
        var toldFailures: [RelativePath: String] = [:]
        /// The path whose failure `status.lastError` shows (`forgetLastErrorIfOver`).
        var lastErrorPath: RelativePath?
        /// The folders the log said could not be read, and why (`tellUnreadable`).
        var toldUnreadable: [SidePath: Errno?] = [:]
    }

    public init(local: FS, cloud: FS, store: any RecordStore, records: [RelativePath: PathRecord],
                clock: any TimeSource, settings: EngineSettings, log: Logger, rootNames: (local: String, cloud: String)) {
        self.local = local
        self.cloud = cloud
        self.store = store
        self.clock = clock
        self.log = log
        self.rootNames = rootNames
        self.settingsBox = Mutex(settings)
        var initial = EngineState(index: SyncIndex(records))
        initial.status.tracked = records.count
        self.state = Mutex(initial)
    }

    public var settings: EngineSettings {
        get { settingsBox.withLock { $0 } }
        set { settingsBox.withLock { $0 = newValue } }
    }

    public var status: EngineStatus { state.withLock { $0.status } }

    /// A closure boxed in a struct: reading a bare closure out of a `Mutex` re-wraps it in
    /// reabstraction thunks on every read, so a handler read once per event grew into a
    /// chain that made sync quadratic and overflowed the stack at ~100 000 events.
    struct Callback<Argument>: Sendable {
        let call: @Sendable (Argument) -> Void
    }

    /// Receives state changes, conflicts and errors (for `watch`). Called on the engine
    /// thread, or for the progress of a batched copy on a copy worker: it must not block.
    public func onEvent(_ handler: (@Sendable (EngineEvent) -> Void)?) {
        eventHandler.withLock { $0 = handler.map(Callback.init) }
    }

    func emit(_ event: EngineEvent) {
        eventHandler.withLock { $0 }?.call(event)
        alertHandler.withLock { $0 }?.call(event)
    }

    /// Receives the same events as `onEvent`, for the desktop notifications. Called as
    /// `onEvent`'s handler is: it must not block.
    public func onAlert(_ handler: (@Sendable (EngineEvent) -> Void)?) {
        alertHandler.withLock { $0 = handler.map(Callback.init) }
    }

    /// Called between actions and during copies (on a copy worker for a batched copy, whose
    /// end the engine thread waits for): proof that the engine is making progress (systemd's
    /// watchdog is fed from here). The handler must be safe from any thread.
    public func onHeartbeat(_ handler: (@Sendable () -> Void)?) {
        heartbeatHandler.withLock { $0 = handler.map { call in Callback { _ in call() } } }
    }

    func heartbeat() { heartbeatHandler.withLock { $0 }?.call(()) }

    func system(_ side: Side) -> FS { side == .local ? local : cloud }
}
