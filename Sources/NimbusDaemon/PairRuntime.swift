import Foundation
import NimbusCore
import NimbusSystem

/// How a pair runs, resolved from the configuration.
public struct RuntimeOptions: Sendable {
    public var localRoot: String
    public var cloudRoot: String
    public var stateDirectory: String
    /// The embedded default may create its folders; a configured root must exist already
    /// (creating a folder at an unmounted mount point would sync into the wrong disk).
    public var createMissingRoots = false
    /// Network mounts get no inotify events for other machines' changes: poll instead.
    public var cloudPolls = false
    public var pollInterval: Int64 = 30_000_000_000
    public var rescanInterval: Int64 = 3_600_000_000_000
    public var quietPeriod: Int64 = 2_000_000_000
    public var engine: EngineSettings

    public init(localRoot: String, cloudRoot: String, stateDirectory: String, engine: EngineSettings) {
        self.localRoot = localRoot
        self.cloudRoot = cloudRoot
        self.stateDirectory = stateDirectory
        self.engine = engine
    }
}

/// One pair at run time: the engine on its own thread, fed by a watcher thread per side,
/// a batcher and a few timers (periodic rescan, cloud polling, retries).
public final class PairRuntime: @unchecked Sendable {
    public let engine: SyncEngine<DiskFileSystem>
    public let options: RuntimeOptions
    let log: Logger
    let clock = SystemClock()
    let inbox = Inbox<Message>()
    let store: JournalRecordStore
    var watchers: [Side: TreeWatcher] = [:]
    var batcher: EngineBatcherState
    var paused = false

    enum Message: Sendable {
        case events(Side, [WatchEvent])
        case watcherStopped(Side)
        case run(@Sendable () -> Void)
        case stop
    }

    struct EngineBatcherState {
        var batcher: EventBatcher
        var nextRescan: Int64
        var nextPoll: Int64?
        /// Sides whose watcher is gone (root removed, watch limit) and need polling.
        var polledSides: Set<Side> = []
    }

    public init(options: RuntimeOptions, log: Logger) throws {
        self.options = options
        self.log = log
        for root in [options.localRoot, options.cloudRoot] where options.createMissingRoots {
            try makeDirectories(SystemPath(root))
        }
        try makeDirectories(SystemPath(options.stateDirectory), permissions: 0o700)
        let (store, records) = try JournalRecordStore.open(directory: SystemPath(options.stateDirectory).appending("journal"))
        self.store = store
        log.info("journal: \(store.recoveryDescription); \(records.count) synced entries")
        let local = DiskFileSystem(root: SystemPath(options.localRoot))
        let cloud = DiskFileSystem(root: SystemPath(options.cloudRoot), temporaryDirectory: RootMarkers.temporary)
        engine = SyncEngine(local: local, cloud: cloud, store: store, records: records, clock: clock,
                            settings: options.engine, log: log, rootNames: (options.localRoot, options.cloudRoot))
        let now = clock.monotonicNow
        batcher = EngineBatcherState(batcher: EventBatcher(quietPeriod: options.quietPeriod),
                                     nextRescan: now + options.rescanInterval,
                                     nextPoll: options.cloudPolls ? now + options.pollInterval : nil)
        if options.cloudPolls { batcher.polledSides.insert(.cloud) }
    }

    /// Runs until `stop()`. `onReady` is called once the first full sync is done.
    public func run(onReady: () -> Void = {}) {
        startWatchers()
        engine.start()
        onReady()
        loop()
        for watcher in watchers.values { watcher.wake() }
        for watcher in watchers.values { watcher.close() }
        try? store.commit()
        try? store.close()
    }

    public func stop() { inbox.post(.stop) }

    /// While paused, changes are collected but nothing is copied.
    public func setPaused(_ paused: Bool) {
        perform { [self] in
            self.paused = paused
            engine.state.withLock { $0.status.phase = paused ? .paused : .idle }
            engine.emit(.phase(paused ? .paused : .idle))
            if !paused { batcher.batcher.add(.rescanAll, now: clock.monotonicNow) }
        }
    }

    /// Rescans both folders now.
    public func requestRescan() {
        perform { [self] in batcher.batcher.add(.rescanAll, now: clock.monotonicNow) }
    }

    /// Runs `work` on the engine thread, between sync passes.
    public func perform(_ work: @escaping @Sendable () -> Void) { inbox.post(.run(work)) }

    func loop() {
        while true {
            let deadlines = [paused ? nil : batcher.batcher.nextDeadline, engine.nextRetry, batcher.nextRescan, batcher.nextPoll,
                             isHalted ? clock.monotonicNow + 2_000_000_000 : nil]
            for message in inbox.wait(until: deadlines.compactMap { $0 }.min(), clock: clock) {
                switch message {
                case .stop: return
                case .run(let work): work()
                case .events(let side, let events): absorb(events, from: side)
                case .watcherStopped(let side):
                    watchers[side] = nil
                    batcher.polledSides.insert(side)
                    if batcher.nextPoll == nil { batcher.nextPoll = clock.monotonicNow + options.pollInterval }
                }
            }
            let now = clock.monotonicNow
            for path in engine.dueRetries() { batcher.batcher.add(.settled(path), now: now) }
            if now >= batcher.nextRescan || isHalted {
                batcher.batcher.add(.rescanAll, now: now)
                batcher.nextRescan = now + options.rescanInterval
            }
            if let poll = batcher.nextPoll, now >= poll {
                batcher.batcher.add(.rescanAll, now: now)
                batcher.nextPoll = now + options.pollInterval
            }
            guard !paused, let batch = batcher.batcher.take(now: now) else { continue }
            switch batch {
            case .everything: engine.sync(nil)
            case .paths(let paths): engine.sync(paths)
            }
            if !isHalted { restartMissingWatchers() }
        }
    }

    var isHalted: Bool {
        if case .halted = engine.status.phase { return true }
        return false
    }

    // MARK: - Watching

    func startWatchers() {
        for side in Side.allCases where !(side == .cloud && options.cloudPolls) {
            startWatcher(side)
        }
    }

    func restartMissingWatchers() {
        for side in Side.allCases where watchers[side] == nil && !(side == .cloud && options.cloudPolls) {
            if startWatcher(side) { batcher.polledSides.remove(side) }
        }
        if batcher.polledSides.isEmpty { batcher.nextPoll = nil }
    }

    @discardableResult
    func startWatcher(_ side: Side) -> Bool {
        let root = side == .local ? options.localRoot : options.cloudRoot
        let options = TreeWatcher.Options(exclude: { path in side == .cloud && path == RootMarkers.cloudDirectory })
        let watcher: TreeWatcher
        do {
            watcher = try TreeWatcher(root: SystemPath(root), options: options)
        } catch {
            log.warning("cannot watch the \(side) folder \(root): \(error); it is scanned every \(self.options.pollInterval / 1_000_000_000) s instead")
            batcher.polledSides.insert(side)
            if batcher.nextPoll == nil { batcher.nextPoll = clock.monotonicNow + self.options.pollInterval }
            return false
        }
        watchers[side] = watcher
        let inbox = self.inbox
        let thread = Thread {
            while true {
                do {
                    let events = try watcher.next(timeout: nil)
                    if events.isEmpty { continue }
                    inbox.post(.events(side, events))
                    if events.contains(where: { $0.kind == .rootRemoved }) { break }
                } catch {
                    break
                }
            }
            inbox.post(.watcherStopped(side))
        }
        thread.name = "nimbus-watch-\(side)"
        thread.start()
        return true
    }

    /// Turns watch events into batcher hints. Events are hints: the scan decides.
    func absorb(_ events: [WatchEvent], from side: Side) {
        let now = clock.monotonicNow
        for event in events.pairingMoves() {
            switch event.kind {
            case .created where !event.isDirectory:
                // A new file is usually still open for writing; links and symlinks are not.
                let kind = try? engine.system(side).metadata(of: event.path)?.kind
                batcher.batcher.add(kind == .file ? .writing(event.path) : .settled(event.path), now: now)
            case .modified:
                batcher.batcher.add(.writing(event.path), now: now)
            case .moved(let from):
                batcher.batcher.add(.settled(from), now: now)
                batcher.batcher.add(.settled(event.path), now: now)
            case .opened:
                continue
            case .overflow:
                log.warning("the \(side) folder changed faster than inotify could report (queue overflow): rescanning it")
                batcher.batcher.add(.rescanAll, now: now)
            case .rootRemoved:
                batcher.batcher.add(.rescanAll, now: now)
            case .watchLimitReached(let limit):
                log.warning("\(limit)")
                batcher.polledSides.insert(side)
                if batcher.nextPoll == nil { batcher.nextPoll = now + options.pollInterval }
            default:
                batcher.batcher.add(.settled(event.path), now: now)
            }
        }
    }
}
