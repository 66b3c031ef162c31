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
///   Debug builds check this (`checkOwner`). The `store` is used from that thread only.
/// - `state`, `settingsBox` and the handler boxes are `Mutex`es: the control server, its
///   workers and the hydration workers read the published state through the queries in
///   `SyncEngine+Queries`/`+Control` from any thread. Nothing outside the engine touches
///   `state` itself.
/// - `stopRequested` and the two flags are atomics, set from any thread (a signal handler)
///   and read on the engine thread.
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
    /// thread: it must not block.
    public func onEvent(_ handler: (@Sendable (EngineEvent) -> Void)?) {
        eventHandler.withLock { $0 = handler.map(Callback.init) }
    }

    func emit(_ event: EngineEvent) {
        eventHandler.withLock { $0 }?.call(event)
        alertHandler.withLock { $0 }?.call(event)
    }

    /// Receives the same events as `onEvent`, for the desktop notifications. Called on the
    /// engine thread: it must not block.
    public func onAlert(_ handler: (@Sendable (EngineEvent) -> Void)?) {
        alertHandler.withLock { $0 = handler.map(Callback.init) }
    }

    /// Called between actions and during copies: proof that the engine is making progress
    /// (systemd's watchdog is fed from here).
    public func onHeartbeat(_ handler: (@Sendable () -> Void)?) {
        heartbeatHandler.withLock { $0 = handler.map { call in Callback { _ in call() } } }
    }

    func heartbeat() { heartbeatHandler.withLock { $0 }?.call(()) }

    func system(_ side: Side) -> FS { side == .local ? local : cloud }

    // MARK: - Starting

    /// Recovery at start: removes temporary files a crash left (see `removeTemporariesAtStart`),
    /// then syncs everything.
    public func start() {
        checkOwner()
        removeTemporariesAtStart()
        // Before any pass: a pass in one style would misread placeholders of the other.
        if rootsAreReady() { preparePlaceholders() }
        marker?.placeholdersKnown()
        sync(nil)
        pruneVersions()
    }

    /// Applies the retention schedule and size limit to the versions store, and counts
    /// what is left for `status`. Returns what it did; nil when the store could not be read.
    @discardableResult
    public func pruneVersions() -> (removed: Int, removedBytes: Int64)? {
        checkOwner()
        let s = settings
        let policy = VersionRetention(retention: s.versionRetention, maxBytes: s.versionsMaxSize)
        do {
            let outcome = try VersionStore(device: s.deviceName).prune(in: cloud, now: clock.wallNow, policy: policy)
            state.withLock {
                $0.status.versionsCount = outcome.count
                $0.status.versionsBytes = outcome.bytes
            }
            if outcome.removed > 0 {
                log.info("removed \(outcome.removed) old version(s) (\(outcome.removedBytes) bytes) by the retention schedule; \(outcome.count) kept")
            }
            return (outcome.removed, outcome.removedBytes)
        } catch {
            log.warning("could not prune old versions: \(error)")
            return nil
        }
    }

    /// A version of `size` bytes was just added to the store.
    func noteVersionKept(size: Int64) {
        state.withLock {
            $0.status.versionsCount += 1
            $0.status.versionsBytes += size
        }
    }

    // MARK: - One sync pass

    /// Syncs the given paths (and everything below them), or everything when nil.
    /// `reportedGone`, when given, names the paths whose deletion (or move away) the watchers
    /// reported: another synced path found gone waits once for the events that explain it
    /// (`holdUnreportedDeletions`). Nil takes every deletion as reported.
    public func sync(_ paths: Set<RelativePath>?, reportedGone: Set<RelativePath>? = nil) {
        checkOwner()
        guard !isStopping, rootsAreReady() else { return }
        setPhase(.syncing)
        defer { setPhase(.idle) }
        var scope = scopeRoots(paths.map(withPlaceholderNames).map(withHardLinkNames))
        // A pass normally settles in one round; a second one follows only when something
        // changed under our feet (an expectation failed) or a conflict moved a file.
        var held = Set<RelativePath>()
        for _ in 0..<4 where !scope.isEmpty {
            var views = gather(scope)
            let renamedFrom = renameSources(outside: scope, views)
            if scope != [.root] && views.needsWholeFolder {
                scope = [.root]
                views = gather(scope)
            } else if !renamedFrom.isEmpty {
                scope = scopeRoots(Set(scope).union(renamedFrom))
                views = gather(scope)
            }
            let reported = scope == [.root] ? nil : reportedGone.map(withPlaceholderNames)
            holdUnreportedDeletions(&views, reported: reported, heldInThisSync: &held)
            var plan = makePlan(views)
            plan = guardDeletes(adapt(plan, views))
            // Placeholder repairs first: what they touch is not in this pass's plan, and is
            // looked at again once they are done.
            plan.actions = views.repairs + plan.actions
            guard !plan.actions.isEmpty else { break }
            let again = execute(plan)
            commit()
            if isStopping { break }
            scope = scopeRoots(again.union(views.withheld))
        }
        removeLeftoverCopies()
        sweepTemporariesIfDue()
    }

    /// After a local copy failed, and only between passes (no copy of ours is in flight then):
    /// removes the temporary files of our copies wherever they are in the local folder.
    func removeLeftoverCopies() {
        guard leftoverCopiesPossible.exchange(false, ordering: .relaxed) else { return }
        do {
            let removed = try local.removeLeftoverCopies()
            if removed > 0 { log.notice("removed \(removed) temporary file(s) of interrupted downloads from the local folder") }
        } catch {
            log.warning("could not look for temporary files of interrupted downloads in the local folder: \(error)")
        }
    }

    /// `paths` and the other synced names of the files among them that have several (hard
    /// links): a write through one name changes them all, and inotify reports only the name
    /// written through.
    func withHardLinkNames(_ paths: Set<RelativePath>) -> Set<RelativePath> {
        state.withLock { s in paths.reduce(into: paths) { all, path in all.formUnion(s.index.otherLocalNames(of: path)) } }
    }

    func rootsAreReady() -> Bool {
        let firstPairing = state.withLock { $0.index.count == 0 }
        var missingRoot: String?
        for side in Side.allCases {
            do { try system(side).revalidateRoot() } catch {
                missingRoot = "The \(side) folder \(side == .local ? rootNames.local : rootNames.cloud) cannot be opened (\(error)): it may be unmounted, renamed or deleted. Nothing is synced until it is back."
            }
        }
        let check = missingRoot.map { RootMarkers.Check.missing($0) } ?? RootMarkers.check(
            local: local, cloud: cloud, firstPairing: firstPairing, localRoot: rootNames.local, cloudRoot: rootNames.cloud, now: clock.wallNow,
            beforeCreatingCloudMarker: { probeCloudIfNeeded(force: true) })
        switch check {
        case .ready:
            let wasHalted = state.withLock { s -> Bool in
                if case .halted = s.status.phase { s.status.phase = .idle; return true }
                return false
            }
            if wasHalted { log.notice("both folders are back; sync resumes") }
            probeCloudIfNeeded(force: wasHalted)
            return true
        case .missing(let message):
            let isNew = state.withLock { s -> Bool in
                defer { s.status.phase = .halted(message) }
                return s.status.phase != .halted(message)
            }
            if isNew { log.error(message); emit(.phase(.halted(message))) }
            return false
        }
    }

    func setPhase(_ phase: EnginePhase) {
        let changed = state.withLock { s -> Bool in
            if case .halted = s.status.phase { return false }
            defer { s.status.phase = phase; s.status.tracked = s.index.count }
            return s.status.phase != phase
        }
        if changed { emit(.phase(phase)) }
    }

    /// The outermost paths to look at. A path whose parent was never synced is widened to
    /// its highest unsynced ancestor, so a new folder is created before what is inside it.
    func scopeRoots(_ paths: Set<RelativePath>?) -> [RelativePath] {
        guard let paths else { return [.root] }
        let index = state.withLock { $0.index }
        var widened = Set<RelativePath>()
        for var path in paths {
            while !path.isRoot, !path.parent.isRoot, index[path.parent] == nil { path = path.parent }
            widened.insert(path)
        }
        var roots: [RelativePath] = []
        for path in widened.sorted() where !roots.contains(where: { $0.contains(path) }) { roots.append(path) }
        return roots
    }

    struct Views {
        var base: [RelativePath: BaseEntry] = [:]
        var local: [RelativePath: FileMetadata] = [:]
        var cloud: [RelativePath: FileMetadata] = [:]
        /// Paths whose local side is a placeholder (`local` holds their base instead), with
        /// the placeholder file's metadata.
        var placeholders: [RelativePath: FileMetadata] = [:]
        /// Untracked placeholder files, by the path they stand for.
        var strays: [RelativePath: FileMetadata] = [:]
        /// Placeholder repairs planned by the fold, carried out before the pass's plan.
        var repairs: [Action] = []
        /// Paths left out of this pass until their repair is done.
        var withheld: Set<RelativePath> = []
        /// A placeholder and its file are not both in the pass: look at the whole folder.
        var needsWholeFolder = false
    }

    /// The base and both sides' current entries for everything below the scope roots,
    /// without what is ignored or Nimbus's own.
    func gather(_ roots: [RelativePath]) -> Views {
        var views = Views()
        let isIgnored = settings.isIgnored
        let excluded: @Sendable (RelativePath, Bool) -> Bool = { path, isDirectory in
            path == RootMarkers.local || path == RootMarkers.cloudDirectory
                || TemporaryName.isTemporary(path.name) || isIgnored(path, isDirectory)
        }
        // The folders above each scope root: a rename into an existing folder must see it.
        let ancestors = Set(roots.flatMap { root -> [RelativePath] in
            var chain: [RelativePath] = []
            var folder = root.parent
            while !folder.isRoot { chain.append(folder); folder = folder.parent }
            return chain
        }).filter { folder in !roots.contains { $0.contains(folder) } }
        // Only those on both sides: an ancestor gone from one side is not reconciled from
        // this partial view (it would look like a lone folder deletion, outside the
        // mass-delete guard's count of what is inside); its own event brings it in scope.
        var present = Set<RelativePath>()
        for folder in ancestors {
            guard let l = try? local.metadata(of: folder), l.kind == .directory,
                  let c = try? cloud.metadata(of: folder), c.kind == .directory else { continue }
            views.local[folder] = l
            views.cloud[folder] = c
            present.insert(folder)
        }
        state.withLock { s in
            for folder in present { if let base = s.index[folder]?.base { views.base[folder] = base } }
            if roots == [.root] { views.base.reserveCapacity(s.index.count) }
            for root in roots {
                for path in s.index.subtree(root) {
                    let base = s.index[path]!.base
                    if !excluded(path, base.kind == .directory) { views.base[path] = base }
                }
            }
        }
        var unreadable: [RelativePath] = []
        for root in roots {
            for side in Side.allCases {
                let fs = system(side)
                var found: [RelativePath: FileMetadata] = [:]
                do {
                    var scan: ScanResult?
                    if root.isRoot {
                        scan = try fs.scan(.root) { !excluded($0, true) }
                    } else if let meta = try fs.metadata(of: root), !excluded(root, meta.kind == .directory) {
                        found[root] = meta
                        if meta.kind == .directory { scan = try fs.scan(root) { !excluded($0, true) } }
                    }
                    found.reserveCapacity(found.count + (scan?.entries.count ?? 0))
                    for (path, meta) in scan?.entries ?? [] where !excluded(path, meta.kind == .directory) { found[path] = meta }
                    for (problem, path) in zip(scan?.problems ?? [], scan?.incomplete ?? []) {
                        log.warning("cannot read \(path) in the \(side) folder: \(problem.errno); it is left as it is and retried")
                        unreadable.append(path)
                    }
                } catch {
                    log.warning("cannot scan \(root) in the \(side) folder: \(error); it will be retried")
                    unreadable.append(root)
                }
                // Most passes have one root: the scan becomes the view as it is, without a rehash.
                if side == .local {
                    if views.local.isEmpty { views.local = found } else { views.local.merge(found) { $1 } }
                } else {
                    if views.cloud.isEmpty { views.cloud = found } else { views.cloud.merge(found) { $1 } }
                }
            }
        }
        // What could not be read must not look like a deletion: leave it out entirely.
        for path in unreadable {
            scheduleRetry(path, error: "unreadable")
            views.base = views.base.filter { !path.contains($0.key) }
            views.local = views.local.filter { !path.contains($0.key) }
            views.cloud = views.cloud.filter { !path.contains($0.key) }
        }
        foldPlaceholders(&views, scope: roots)
        return views
    }

    /// Synced paths outside `scope` whose inode turned up at a new path inside it: the source
    /// of a rename whose destination was seen first (a file moved into a folder created just
    /// before). With them in scope the rename is propagated as a rename, not a copy.
    func renameSources(outside scope: [RelativePath], _ views: Views) -> Set<RelativePath> {
        state.withLock { s in
            var sources = Set<RelativePath>()
            for (side, view) in [(Side.local, views.local), (.cloud, views.cloud)] {
                for (path, meta) in view where views.base[path]?[side].inode != meta.inode {
                    guard let source = s.index.path(ofInode: meta.inode, on: side), source != path,
                          !scope.contains(where: { $0.contains(source) }) else { continue }
                    sources.insert(source)
                }
            }
            return sources
        }
    }

    func makePlan(_ views: Views) -> Plan {
        var plan = reconcile(base: views.base, local: views.local, cloud: views.cloud, namer: namer)
        var hashes = SideHashes()
        // A path may need hashes for two reasons in turn (verifying an ambiguous base, then
        // comparing both sides), so allow a few rounds.
        for _ in 0..<3 where !plan.needsHashes.isEmpty {
            // A placeholder has no content of its own; it always equals its base.
            for request in plan.needsHashes where !(request.side == .local && views.placeholders[request.path] != nil) {
                do {
                    let hash = try system(request.side).contentHash(of: request.path)
                    if request.side == .local { hashes.local[request.path] = hash } else { hashes.cloud[request.path] = hash }
                } catch {
                    log.warning("cannot read \(request.path) in the \(request.side) folder to compare it: \(error)")
                    scheduleRetry(request.path, error: "\(error)")
                }
            }
            plan = reconcile(base: views.base, local: views.local, cloud: views.cloud, hashes: hashes, namer: namer)
        }
        for path in plan.skipped where views.base[path] == nil {
            log.info("skipping \(path): special files (fifos, sockets, devices) are not synced")
        }
        return plan
    }

    /// Names conflict copies made now, in local time.
    var namer: ConflictNamer {
        let s = settings
        return ConflictNamer(device: s.deviceName, wallTime: clock.wallNow, utcOffsetSeconds: s.utcOffsetSeconds)
    }

    func existsOnEitherSide(_ path: RelativePath) -> Bool {
        (try? local.metadata(of: path)) != nil || (try? cloud.metadata(of: path)) != nil
    }

    func commit() {
        do {
            try store.commit()
            try store.compactIfNeeded(state.withLock { $0.index.all.map { (key: $0.0, value: $0.1) } })
        } catch {
            log.error("cannot write the journal: \(error). Sync continues; changes since the last successful write will be re-checked at the next start.")
        }
    }

    // MARK: - Retries

    func scheduleRetry(_ path: RelativePath, error: String, delay fixedDelay: Duration? = nil) {
        state.withLock { s in
            let attempt = s.retryCount[path, default: 0] + 1
            s.retryCount[path] = attempt
            // 1 s, 2 s, 4 s … up to 5 minutes.
            let delay = fixedDelay ?? .seconds(min(300, 1 << min(attempt - 1, 9)))
            s.retries[path] = clock.monotonicNow + delay
        }
    }

    /// Looks at `paths` again soon (an application released its lease on them).
    public func scheduleSoon(_ paths: [RelativePath]) {
        let now = clock.monotonicNow
        state.withLock { s in for path in paths { s.retries[path] = now } }
    }

    /// When the next retry is due, if any.
    public var nextRetry: MonotonicInstant? { state.withLock { $0.retries.values.min() } }

    /// Paths whose retry is due now; they are removed from the schedule.
    public func dueRetries() -> Set<RelativePath> {
        let now = clock.monotonicNow
        return state.withLock { s in
            let due = s.retries.filter { $0.value <= now }.map(\.key)
            for path in due { s.retries[path] = nil }
            return Set(due)
        }
    }
}
