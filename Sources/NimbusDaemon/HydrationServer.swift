import Dispatch
import FoundationEssentials
import NimbusCore
import NimbusSystem
import NimbusVocabulary
import Synchronization

/// Serves the kernel's pre-content events for real-name placeholders (DESIGN §5): one thread
/// reads the pair's `FanotifyGroup`; a process that opens or reads a not-downloaded file waits
/// while a worker writes the cloud content in through the event's descriptor, then gets the
/// right bytes, or an errno, never zeros.
///
/// - Concurrent openers of one file share one fill: their events wait for it together.
/// - Programs in `refusedPrograms` (indexers, scanners; matched by `/proc/PID/comm` or the
///   executable's name) are refused with `EPERM` instead of fetching.
/// - Beyond `rateLimit` fills a minute (a token bucket), opens are refused with `EAGAIN`
///   and the storm is logged once.
/// - The daemon's own opens are refused with `EBUSY`: it never reads a placeholder's content,
///   and must not wait for itself.
///
/// The server knows placeholders by inode (`register`, `forget`), because the event says only
/// which file, not by which name it was opened.
///
/// Who owns what: one thread (`serve`) reads the group; each fill runs on a Dispatch worker
/// (`fillers`). Every piece of shared state is its own `Mutex` or atomic, so the engine
/// thread may `register`/`forget` and the workers may finish fills at any time; what a fill
/// means for the journal goes back to the engine thread through `completed` (the runtime's
/// `perform`).
public final class HydrationServer: Sendable {
    /// A not-downloaded file: its path in both roots and what the cloud file must still be.
    public struct Placeholder: Sendable, Hashable {
        public var path: RelativePath
        public var cloud: FileMetadata
        public init(path: RelativePath, cloud: FileMetadata) {
            self.path = path
            self.cloud = cloud
        }
    }

    /// How a fill ended, for the engine (journal, state, logs).
    public enum Outcome: Sendable {
        case filled(Placeholder, local: FileMetadata)
        /// The file was changed while nobody listened (its size is not the cloud's): left alone.
        case changedLocally(Placeholder)
        case failed(Placeholder, Errno, String)
    }

    /// What the server takes from the pair's settings (`PairSettings`, where the defaults are).
    public struct Settings: Sendable {
        public var refusedPrograms: Set<String>
        /// Fills a minute (0: every open is refused).
        public var rateLimit: Int
        /// How long a reader may wait for its fill: past it, the reader gets `EIO` and
        /// the fill goes on for the next reader. Documented in nimbus.conf(5) (`fill-timeout`).
        public var fillTimeout: Duration
        /// A fill is an automatic download: it leaves this many bytes free on the local disk
        /// (`[cache] min-free-space`), or its reader gets ENOSPC. 0: only a full disk refuses.
        public var minFreeSpace: Int64

        public init(_ settings: PairSettings = .defaults) {
            refusedPrograms = Set(settings.refusedPrograms)
            rateLimit = settings.hydrateOnOpen ? settings.openRateLimit : 0
            fillTimeout = settings.fillTimeout
            minFreeSpace = settings.minFreeSpace
        }
    }

    let group: FanotifyGroup
    /// The cloud folder: a descriptor held (tests), or its path, opened for each fill so that
    /// a cloud folder mounted again is found.
    let cloudRoot: FileDescriptor?
    let cloudRootPath: SystemPath?
    let log: Logger
    let settings: Mutex<Settings>
    let placeholders = Mutex<[FileIdentity: Placeholder]>([:])
    /// A reader waiting for its file, and since when, for `fillTimeout`.
    struct Waiter {
        var event: FanotifyEvent
        var since: MonotonicInstant
    }

    /// Fills (or evictions) running, by inode, with the readers waiting for each.
    let inFlight = Mutex<[FileIdentity: [Waiter]]>([:])
    /// Fills whose slowness is logged already.
    let slowLogged = Mutex<Set<FileIdentity>>([])
    let limiter: Mutex<RateLimiter>
    let refusedLogged = Mutex<Set<String>>([])
    let stormHandler = Mutex<(@Sendable (RelativePath, Int, String?) -> Void)?>(nil)
    /// Opens of files not known as placeholders, held until the engine has marked and made
    /// known every placeholder of its journal (`placeholdersKnown`); nil from then on. A group
    /// kept across a crash brings such opens with it, and letting one through would hand its
    /// program zeros.
    let heldUntilKnown = Mutex<[FanotifyEvent]?>([])
    let stopping = Atomic<Bool>(false)
    let stopped = DispatchSemaphore(value: 0)
    /// Wakes `serve` from its wait: a stop, or settings whose fill-timeout may be shorter.
    let wake: WakePipe
    /// How often `serve` came back from its wait (tests: an idle server never does).
    let wakeUps = Atomic<Int>(0)
    let fillers = DispatchGroup()
    let now: @Sendable () -> MonotonicInstant
    let progress: @Sendable (RelativePath, Int64, Int64) -> Void
    let completed: @Sendable (Outcome) -> Void

    /// Starts serving. `completed` and `progress` are called on worker threads and must not wait
    /// for anything that may itself be waiting for a fill. Throws when the wake-up pipe cannot
    /// be made (no descriptor left).
    public convenience init(group: FanotifyGroup, cloudRoot: FileDescriptor, settings: Settings, log: Logger,
                            now: @escaping @Sendable () -> MonotonicInstant = { SystemClock().monotonicNow },
                            progress: @escaping @Sendable (RelativePath, Int64, Int64) -> Void = { _, _, _ in },
                            completed: @escaping @Sendable (Outcome) -> Void) throws {
        try self.init(group: group, cloudRoot: cloudRoot, cloudRootPath: nil, settings: settings, log: log, now: now,
                  progress: progress, completed: completed)
    }

    public convenience init(group: FanotifyGroup, cloudRootPath: SystemPath, settings: Settings, log: Logger,
                            now: @escaping @Sendable () -> MonotonicInstant = { SystemClock().monotonicNow },
                            progress: @escaping @Sendable (RelativePath, Int64, Int64) -> Void = { _, _, _ in },
                            completed: @escaping @Sendable (Outcome) -> Void) throws {
        try self.init(group: group, cloudRoot: nil, cloudRootPath: cloudRootPath, settings: settings, log: log, now: now,
                  progress: progress, completed: completed)
    }

    private init(group: FanotifyGroup, cloudRoot: FileDescriptor?, cloudRootPath: SystemPath?, settings: Settings, log: Logger,
                now: @escaping @Sendable () -> MonotonicInstant = { SystemClock().monotonicNow },
                progress: @escaping @Sendable (RelativePath, Int64, Int64) -> Void = { _, _, _ in },
                completed: @escaping @Sendable (Outcome) -> Void) throws {
        self.wake = try WakePipe()
        self.group = group
        self.cloudRoot = cloudRoot
        self.cloudRootPath = cloudRootPath
        self.log = log
        self.settings = Mutex(settings)
        self.limiter = Mutex(RateLimiter(limit: settings.rateLimit))
        self.now = now
        self.progress = progress
        self.completed = completed
        ProcessSupport.detachThread(name: "nimbus-hydrate") { [self] in serve() }
    }

    /// Knows `inode` of `device` as the not-downloaded file `placeholder` (after creating,
    /// marking or evicting it).
    public func register(device: UInt64, inode: UInt64, _ placeholder: Placeholder) {
        placeholders.withLock { $0[FileIdentity(device: device, inode: inode)] = placeholder }
    }

    /// Forgets a file that is no longer a placeholder (downloaded, removed, replaced).
    public func forget(device: UInt64, inode: UInt64) {
        _ = placeholders.withLock { $0.removeValue(forKey: FileIdentity(device: device, inode: inode)) }
    }

    /// Called once per storm (the first open refused past `rateLimit`) with the path, the
    /// limit and the program, for the desktop notification. Must not block.
    public func onStorm(_ handler: (@Sendable (RelativePath, Int, String?) -> Void)?) {
        stormHandler.withLock { $0 = handler }
    }

    /// Whether a fill (or an eviction) of the file `device`/`inode` is running now: its writes
    /// move the file's time until it ends, restored then, so what a scan sees meanwhile is no
    /// edit (`SyncEngine.foldPlaceholders`).
    public func isFilling(device: UInt64, inode: UInt64) -> Bool {
        inFlight.withLock { $0[FileIdentity(device: device, inode: inode)] != nil }
    }

    /// An eviction in place begins on `inode`: known as `placeholder` from now on, and its
    /// readers wait (as for a fill) until `endEviction`, so none reads the holes being made.
    public func beginEviction(device: UInt64, inode: UInt64, _ placeholder: Placeholder) {
        let identity = FileIdentity(device: device, inode: inode)
        placeholders.withLock { $0[identity] = placeholder }
        inFlight.withLock { $0[identity] = [] }
    }

    /// The eviction of `inode` is over: `punched`, its waiting readers get a fill; not, it is
    /// content as before (forgotten, its mark taken off) and they are let through.
    public func endEviction(device: UInt64, inode: UInt64, punched: Bool) {
        let identity = FileIdentity(device: device, inode: inode)
        if !punched { forget(device: device, inode: inode) }
        let waiting = inFlight.withLock { running -> [Waiter] in
            let waiting = running[identity] ?? []
            if waiting.isEmpty || !punched { running[identity] = nil }
            return waiting
        }
        guard let first = waiting.first else { return }
        guard punched, let placeholder = placeholders.withLock({ $0[identity] }) else {
            try? group.unmark(file: first.event.file)
            for waiter in waiting { answer(waiter.event, .allow) }
            return
        }
        startFill(first.event.file, placeholder, identity: identity)
    }

    /// Every placeholder the journal knows is marked and known: the opens held until now are
    /// served (or let through, when their file is no placeholder at all).
    public func placeholdersKnown() {
        let held = heldUntilKnown.withLock { held -> [FanotifyEvent] in
            defer { held = nil }
            return held ?? []
        }
        for event in held { handle(event) }
    }

    public func update(_ settings: Settings) {
        self.settings.withLock { $0 = settings }
        limiter.withLock { $0.limit = settings.rateLimit }
        wake.wake()  // A shorter fill-timeout may make a waiting reader overdue sooner.
    }

    /// Stops reading events and waits for running fills to answer their readers: a fill under
    /// way gives up at its next chunk (its reader gets EIO, the file is a placeholder again), so
    /// a stop never waits for a multi-GiB download. The group stays open: closing it lets the
    /// kernel allow every reader still waiting (zeros), so its owner closes it only once the
    /// files are guarded. Called once; a second call does nothing.
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wake.wake()
        stopped.wait()
        fillers.wait()
    }
}
