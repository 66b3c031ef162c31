import FoundationEssentials
import NimbusVocabulary
import Synchronization
import NimbusCore
import NimbusSystem

/// One pair at run time: the engine on its own thread, fed by a watcher thread per side,
/// a batcher and a few timers (periodic rescan, cloud polling, retries). Generic over the
/// filesystem and the watcher, with the clock as a value, as `SyncEngine` is: nimbusd runs a
/// `DiskPairRuntime` (`PairRuntime+Disk`), tests run one in memory without a process.
///
/// Who owns what:
/// - The engine thread (the one that calls `run`) owns every `var` here (`options`, the
///   watchers, the batcher, the timers) and the engine's entry points. Other threads reach
///   them only by posting to `inbox`: `perform`, `stop`, `reload`, `setPaused`, `download`.
/// - One thread per watched side (`startWatcher`) blocks in its watcher and posts events.
/// - `downloads` (a `Mutex`) is shared with the control server's thread, which joins
///   requests to a download already waiting; `stopping` is an atomic the watcher threads read.
/// It is `@unchecked Sendable` for those `var`s: the inbox is what makes sharing it safe.
public final class PairRuntime<FS: FileSystem, Watcher: TreeWatching>: @unchecked Sendable {
    public let engine: SyncEngine<FS>
    /// Changed only on the engine thread (reload); the folders never change while running.
    public private(set) var options: RuntimeOptions
    let log: Logger
    let clock: any TimeSource
    let inbox = Inbox<Message>()
    let store: any RecordStore
    /// Watches one side's folder (its root, and what to report).
    let makeWatcher: (Side, SystemPath, TreeWatcher.Options) throws -> Watcher
    /// The local folder's `.nimbusignore`; nil when there is none.
    let readIgnoreFile: () throws -> [UInt8]?
    var watchers: [Side: Watcher] = [:]
    /// When the sides left without a watcher are tried again, and the wait that led there
    /// (`scheduleWatchRetry`); nil while every side that should be watched is.
    var watchRetry: (due: MonotonicInstant, delay: Duration)?
    /// Whether watchers started now gather bursts (`watchGathering`): only until the first
    /// pass is done.
    var watchersGather = true
    var batcher: EngineBatcherState
    /// Set before the watchers are woken at shutdown, so their threads do not wait again.
    let stopping = Atomic<Bool>(false)
    /// Who waits for each download requested and not finished yet.
    let downloads = Mutex<[RelativePath: PendingDownload]>([:])
    var openLimiter: RateLimiter
    var nextCacheCheck = MonotonicInstant.origin
    /// When a halted pair next checks whether its folders are back.
    var nextHaltedCheck = MonotonicInstant.origin
    static var haltedCheckInterval: Duration { .seconds(2) }
    /// How much work (paths synced, events absorbed) makes going idle worth a `malloc_trim`.
    static var trimAfterWork: Int { 1_000 }
    /// How long the pair stays idle after less work than that before memory is handed back
    /// anyway (`handBackMemoryIfIdle`); also the shortest time between two such hand-backs.
    static var settledTrimDelay: Duration { .seconds(10) }
    /// When the versions store may next be pruned after a full scan.
    var nextPrune = MonotonicInstant.origin
    /// Set by `begin` until `finishStart` did what READY=1 does not wait for.
    var startUnfinished = false
    static var pruneInterval: Duration { .minutes(10) }

    enum Message: Sendable {
        case events(Side, [WatchEvent])
        case watcherStopped(Side)
        case run(@Sendable () -> Void)
        case stop
    }

    struct EngineBatcherState {
        var batcher: EventBatcher
        var nextRescan: MonotonicInstant
        var nextPoll: MonotonicInstant?
        /// Sides whose watcher is gone (root removed, watch limit) and need polling.
        var polledSides: Set<Side> = []
        /// Paths the watchers reported deleted or moved away, until a pass looks at them: a
        /// synced path found gone that is not among them waits for the events that explain it
        /// (`SyncEngine.holdUnreportedDeletions`).
        var reportedGone: Set<RelativePath> = []
    }

    let notifier: SystemdNotifier
    /// Held while running: a second daemon on the same local folder refuses to start.
    let rootLock: DirectoryLock?
    var nextWatchdog: MonotonicInstant?
    var lastStatus = ""
    /// Paths synced and watch events absorbed since memory was last handed back to the
    /// system: a burst frees far more than it keeps, spread over every thread's malloc arena.
    var workSinceTrim = 0
    /// When memory is handed back if the pair is still idle then, after less work than
    /// `trimAfterWork`; nil when there was no work since the last hand-back.
    var settledTrim: MonotonicInstant?
    /// Fills real-name placeholders when programs open them; nil in the suffix style.
    var hydration: HydrationServer?

    /// A runtime for `engine`, whose journal is `store`. Nothing is read or watched before `run`
    /// (or, in tests, `begin`).
    init(engine: SyncEngine<FS>, store: any RecordStore, options: RuntimeOptions, clock: any TimeSource, log: Logger,
         notifier: SystemdNotifier = SystemdNotifier(), rootLock: DirectoryLock? = nil,
         readIgnoreFile: @escaping () throws -> [UInt8]? = { nil },
         makeWatcher: @escaping (Side, SystemPath, TreeWatcher.Options) throws -> Watcher) {
        self.engine = engine
        self.store = store
        self.options = options
        self.clock = clock
        self.log = log
        self.notifier = notifier
        self.rootLock = rootLock
        self.readIgnoreFile = readIgnoreFile
        self.makeWatcher = makeWatcher
        openLimiter = RateLimiter(limit: options.openRateLimit)
        let now = clock.monotonicNow
        batcher = EngineBatcherState(batcher: EventBatcher(quietPeriod: options.quietPeriod),
                                     nextRescan: now + options.rescanInterval,
                                     nextPoll: options.cloudPolls ? now + options.pollInterval : nil)
        if options.cloudPolls { batcher.polledSides.insert(.cloud) }
        loadIgnoreRules()
        // The watchdog is fed from the engine thread, between actions and during copies (a
        // batched copy's progress comes from the copy worker the engine thread waits for), so
        // a stuck engine stops the pings and systemd restarts the daemon.
        if let interval = notifier.watchdogInterval {
            nextWatchdog = clock.monotonicNow + interval
            let due = Mutex(clock.monotonicNow + interval)
            engine.onHeartbeat { [notifier] in
                let now = clock.monotonicNow
                let send = due.withLock { next -> Bool in
                    guard now >= next else { return false }
                    next = now + interval
                    return true
                }
                if send { notifier.watchdog() }
            }
        }
    }

    /// Forgets the note of which folder this daemon serves (at a clean stop).
    func releaseRootLock() {
        guard let lock = rootLock, let file = options.servedFile(device: lock.device, inode: lock.inode) else { return }
        try? FileManager.default.removeItem(atPath: file)
    }

    /// Reads `.nimbusignore` from the local root (gitignore syntax); problems are logged with
    /// their line. Ignored paths stay local and are never synced.
    func loadIgnoreRules() {
        let path = SystemPath(options.localRoot).appending(SystemPath(".nimbusignore"))
        var bytes: [UInt8] = []
        do {
            bytes = try readIgnoreFile() ?? []
        } catch {
            log.warning("cannot read \(path): \(error); only the default ignore rules apply")
        }
        let rules = IgnoreRules(parsing: bytes)
        for problem in rules.problems { log.warning("\(path):\(problem.line): \(problem.message); the line is skipped") }
        engine.settings.isIgnored = { rules.isIgnored($0, isDirectory: $1) }
    }

    /// Applies a new configuration (SIGHUP, `reload`). Folders cannot change while running:
    /// new ones are ignored here (`ConfigurationReloader` says they need a restart).
    public func reload(_ newOptions: RuntimeOptions) {
        perform { [self] in
            // The ignore rules stay: they are read again from `.nimbusignore` below.
            var settings = newOptions.engine
            settings.isIgnored = engine.settings.isIgnored
            engine.settings = settings
            options.engine = settings
            openLimiter.limit = options.openRateLimit
            hydration?.update(options.hydration)
            nextCacheCheck = .origin
            batcher.batcher.quietPeriod = options.quietPeriod
            loadIgnoreRules()
            // The full rescan now is the one the new intervals count from: a shorter interval
            // takes effect at once, not after the old one has run out.
            let now = clock.monotonicNow
            batcher.batcher.add(.rescanAll, now: now)
            batcher.nextRescan = now + options.rescanInterval
            if batcher.nextPoll != nil { batcher.nextPoll = now + options.pollInterval }
            engine.downloadModePlaceholders()
            log.notice("configuration reloaded")
            notifier.ready(status: statusLine())
        }
    }

    /// Syncs `paths` soon (an application released its lease on them).
    public func syncSoon(_ paths: [RelativePath]) {
        perform { [self] in
            let now = clock.monotonicNow
            for path in paths { batcher.batcher.add(.settled(path), now: now) }
        }
    }

    /// One line for systemd's status and `nimbusctl status`.
    public func statusLine() -> String {
        let status = engine.status
        let (inProgress, errors) = engine.activityCounts
        switch status.phase {
        case .halted(let reason): return "Stopped: \(reason)"
        case .paused: return "Paused; \(status.tracked) entries tracked"
        default:
            var line = "Synced \(status.tracked) entries"
            if inProgress > 0 { line += ", \(inProgress) in progress" }
            if errors > 0 { line += ", \(errors) with errors" }
            if status.heldDeletes > 0 {
                let kept = status.keptDeletes > 0 ? " and \(status.keptDeletes) applied just before kept" : ""
                line += ", \(status.heldDeletes) deletions held\(kept) (nimbusctl confirm-deletes / revert-deletes)"
            }
            return line
        }
    }

    /// Runs until `stop()`. `onReady` is called once the first full sync is done, and not at
    /// all when a stop came during it: a daemon told to stop while starting is never ready.
    public func run(onReady: () -> Void = {}) {
        begin()
        if !engine.isStopping { onReady() }
        loop()
        finish()
    }

    /// Starts on the calling thread, which becomes the engine thread: watchers, the first
    /// full sync, the mode's downloads, the cache budget. What READY=1 does not promise waits
    /// for the loop (`finishStart`).
    func begin() {
        engine.claimOwnership()
        startWatchers()
        engine.firstPass()
        stopWatchersGathering()
        startUnfinished = true
        // Stopped during the first pass (SIGTERM): straight to the clean stop.
        if !engine.isStopping {
            // Before READY: in mirror mode a placeholder left from on-demand mode is work not
            // done yet, and `status` must not call the pair synced while it waits.
            engine.downloadModePlaceholders()
            checkCacheBudget(now: clock.monotonicNow)
        }
    }

    /// The start's work that READY=1 does not wait for, at the loop's first turn (issue 15):
    /// the uploaded files' state marks are written (`SyncEngine+PendingMarks`), the versions
    /// store is pruned and counted (its figures in `status` are the store's from
    /// then on), and the first sync's memory is handed back once the pair is idle
    /// (`handBackMemoryIfIdle`: reading /proc/self/smaps and `malloc_trim` took 2.5 ms of a
    /// 65 ms first sync of 1 000 files, before READY=1).
    func finishStart() {
        // Stopping (SIGTERM during the first pass): nothing here is worth delaying the stop.
        guard startUnfinished, !engine.isStopping else { return }
        startUnfinished = false
        engine.writePendingMarks()
        if !isHalted { engine.pruneVersions() }
        nextPrune = clock.monotonicNow + Self.pruneInterval
        workSinceTrim += Self.trimAfterWork
    }

    /// The clean stop, after the loop: placeholders guarded while the listener still answers,
    /// then the listener stops (its readers answered); the group is closed by its owner after this.
    func finish() {
        answerDownloadsNeverStarted()
        engine.guardPlaceholders()
        hydration?.stop()
        stopping.store(true, ordering: .sequentiallyConsistent)
        for watcher in watchers.values { watcher.wake() }
        for watcher in watchers.values { watcher.close() }
        engine.writePendingMarks()  // Those of a first pass that a stop cut short.
        engine.commit()  // Through the engine: a local marker not yet durable is flushed first.
        try? store.close()
        releaseRootLock()
    }

    /// Stops the runtime: a pass under way stops between two files (the engine checks the
    /// flag where it feeds the watchdog), then the loop ends. Safe from any thread.
    public func stop() {
        engine.requestStop()
        inbox.post(.stop)
    }

    /// While paused, changes are collected but nothing is copied. The engine holds the one
    /// record of it (`engine.isPaused`).
    public func setPaused(_ paused: Bool) {
        perform { [self] in
            engine.setPaused(paused)
            if !paused { batcher.batcher.add(.rescanAll, now: clock.monotonicNow) }
        }
    }

    /// Rescans both folders now.
    public func requestRescan() {
        perform { [self] in batcher.batcher.add(.rescanAll, now: clock.monotonicNow) }
    }

    /// Runs `work` on the engine thread, between sync passes.
    public func perform(_ work: @escaping @Sendable () -> Void) { inbox.post(.run(work)) }
}
