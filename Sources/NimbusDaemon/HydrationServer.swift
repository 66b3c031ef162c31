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
        /// How long a reader may wait for its fill (ns): past it, the reader gets `EIO` and
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
    private let limiter: Mutex<RateLimiter>
    private let refusedLogged = Mutex<Set<String>>([])
    private let stormHandler = Mutex<(@Sendable (RelativePath, Int, String?) -> Void)?>(nil)
    /// Opens of files not known as placeholders, held until the engine has marked and made
    /// known every placeholder of its journal (`placeholdersKnown`); nil from then on. A group
    /// kept across a crash brings such opens with it, and letting one through would hand its
    /// program zeros.
    private let heldUntilKnown = Mutex<[FanotifyEvent]?>([])
    let stopping = Atomic<Bool>(false)
    let stopped = DispatchSemaphore(value: 0)
    /// Wakes `serve` from its wait: a stop, or settings whose fill-timeout may be shorter.
    let wake: WakePipe
    /// How often `serve` came back from its wait (tests: an idle server never does).
    let wakeUps = Atomic<Int>(0)
    private let fillers = DispatchGroup()
    let now: @Sendable () -> MonotonicInstant
    private let progress: @Sendable (RelativePath, Int64, Int64) -> Void
    private let completed: @Sendable (Outcome) -> Void

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

    /// Stops reading events and waits for running fills to answer their readers. The group
    /// stays open: closing it lets the kernel allow every reader still waiting (zeros), so its
    /// owner closes it only once the files are guarded.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        wake.wake()
        stopped.wait()
        fillers.wait()
    }

    func handle(_ event: FanotifyEvent) {
        guard event.needsResponse else {
            if event.events.contains(.queueOverflow) { log.warning("real-name placeholders: the kernel's event queue overflowed") }
            if event.file.rawValue >= 0 { try? event.file.close() }
            return
        }
        guard let current = try? event.file.metadata() else { return answer(event, .deny(.ioError)) }
        let identity = FileIdentity(device: current.device, inode: current.inode)
        guard let placeholder = placeholders.withLock({ $0[identity] }) else {
            // The daemon's own reads (the start-up check of a fill cut short) never wait for
            // itself: they see what the file holds.
            if event.pid == ProcessSupport.processID { return answer(event, .allow) }
            let held = heldUntilKnown.withLock { held -> Bool in
                guard held != nil else { return false }
                held!.append(event)
                return true
            }
            if held { return }
            // Not (or no longer) a placeholder: a mark left behind.
            try? group.unmark(file: event.file)
            return answer(event, .allow)
        }
        if RealNamePlaceholderFile.decide(notDownloaded: true, currentSize: current.size,
                                          expectedSize: placeholder.cloud.size) == .leave {
            forget(device: current.device, inode: current.inode)
            try? group.unmark(file: event.file)
            answer(event, .allow)
            return completed(.changedLocally(placeholder))
        }
        // Joins a fill already running for this file.
        let waiter = Waiter(event: event, since: now())
        let joined = inFlight.withLock { running in
            guard running[identity] != nil else { return false }
            running[identity]!.append(waiter)
            return true
        }
        if joined { return }
        if let refusal = refusal(of: event, placeholder) { return answer(event, .deny(refusal)) }
        if let short = shortOfSpace(event.file, placeholder) {
            let message = "not enough space to download \(placeholder.path): \(short). Free some space, evict files "
                + "(nimbusctl evict), or download it with nimbusctl download"
            log.warning("\(message); the program that opened it gets ENOSPC")
            answer(event, .deny(.noSpace))
            return completed(.failed(placeholder, .noSpace, message))  // Its state says so, as the suffix style's does.
        }
        inFlight.withLock { $0[identity] = [waiter] }
        startFill(event.file, placeholder, identity: identity)
    }

    /// Fills through a descriptor of its own (a duplicate of a reader's event's), so that a
    /// reader answered early (timeout) does not take the fill's descriptor with it.
    private func startFill(_ eventFile: FileDescriptor, _ placeholder: Placeholder, identity: FileIdentity) {
        let file: FileDescriptor
        do {
            file = try eventFile.duplicate()
        } catch {
            log.warning("cannot fetch \(placeholder.path) for the program that opened it: \(error)")
            let waiting = inFlight.withLock { $0.removeValue(forKey: identity) ?? [] }
            for waiter in waiting { answer(waiter.event, .deny(.ioError)) }
            return
        }
        fillers.enter()
        DispatchQueue.global().async { [self] in
            defer { fillers.leave() }
            defer { try? file.close() }
            fill(file, placeholder, identity: identity)
        }
    }

    /// Why the local disk has no room for this fill within min-free-space, or nil.
    private func shortOfSpace(_ file: FileDescriptor, _ placeholder: Placeholder) -> String? {
        let reserve = settings.withLock { $0.minFreeSpace }
        guard reserve > 0, let space = try? file.spaceInfo(), space.available - placeholder.cloud.size < reserve else { return nil }
        return "it needs \(placeholder.cloud.size) bytes, \(space.available) are free, and automatic downloads keep "
            + "min-free-space = \(reserve) bytes free"
    }

    /// Why this open may not fetch, or nil.
    private func refusal(of event: FanotifyEvent, _ placeholder: Placeholder) -> Errno? {
        if event.pid == ProcessSupport.processID {
            log.debug("real-name placeholders: nimbusd itself opened the not-downloaded \(placeholder.path); refused")
            return .busy
        }
        let program = Self.programNames(of: event.pid)
        if let refused = program.first(where: { isRefused($0) }) {
            if refusedLogged.withLock({ $0.insert(refused).inserted }) {
                log.notice("\(refused) (pid \(event.pid)) opened the not-downloaded \(placeholder.path): refused, "
                           + "as every open by \(refused) will be (refused-programs)")
            }
            return .notPermitted
        }
        switch limiter.withLock({ $0.admit(now: now()) }) {
        case .allowed:
            return nil
        case .refused(let first):
            if first {
                let limit = settings.withLock { $0.rateLimit }
                log.warning("not-downloaded files are being opened faster than open-rate-limit = \(limit) a minute "
                            + "(\(program.first ?? "pid \(event.pid)") opened \(placeholder.path)): such opens fail "
                            + "with EAGAIN until it calms down; use 'nimbusctl download' for what you need")
                stormHandler.withLock { $0 }?(placeholder.path, limit, program.first)
            }
            return .wouldBlock
        }
    }

    /// `/proc/PID/comm` holds at most 15 bytes of the name ("tracker-miner-f"): a configured
    /// name matches its first 15 bytes there, or the executable's file name in full.
    private func isRefused(_ name: String) -> Bool {
        settings.withLock { settings in
            settings.refusedPrograms.contains(name) || settings.refusedPrograms.contains { $0.utf8.count > 15 && $0.utf8.prefix(15).elementsEqual(name.utf8) }
        }
    }

    /// The opener's `comm` and, where readable, its executable's file name.
    static func programNames(of pid: Int32) -> [String] {
        var names: [String] = []
        if let file = try? FileDescriptor.open(SystemPath("/proc/\(pid)/comm")),
           let bytes = try? file.closeAfter({ try file.readAll() }) {
            names.append(String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self))
        }
        if let target = try? FileDescriptor.currentDirectory.readSymlink(SystemPath("/proc/\(pid)/exe")),
           let slash = target.lastIndex(of: UInt8(ascii: "/")) {
            names.append(String(decoding: target[(slash + 1)...], as: UTF8.self))
        }
        return names
    }

    private func fill(_ file: FileDescriptor, _ placeholder: Placeholder, identity: FileIdentity) {
        let outcome: Outcome
        do {
            let cloud: FileDescriptor
            do {
                if let cloudRoot {
                    cloud = try FileDescriptor.open(beneath: cloudRoot, placeholder.path, [.noFollow, .nonBlocking])
                } else {
                    let root = try FileDescriptor.open(cloudRootPath!, [.directory])
                    cloud = try root.closeAfter { try FileDescriptor.open(beneath: root, placeholder.path, [.noFollow, .nonBlocking]) }
                }
            } catch let error as Errno {
                throw error.at("open the cloud's", placeholder.path)
            }
            try cloud.closeAfter {
                try RealNamePlaceholderFile.fill(file, from: cloud, expected: placeholder.cloud, path: placeholder.path,
                                                 state: (NimbusCore.Placeholder.stateAttribute, Array("downloaded".utf8))) {
                    progress(placeholder.path, $0, placeholder.cloud.size)
                }
            }
            outcome = .filled(placeholder, local: try file.metadata())
        } catch {
            outcome = .failed(placeholder, Self.errno(for: error), "\(error)")
        }
        let response: FanotifyResponse
        switch outcome {
        case .filled:
            forget(device: identity.device, inode: identity.inode)
            try? group.unmark(file: file)
            response = .allow
        case .failed(_, let errno, let message):
            log.warning("cannot fetch \(placeholder.path) for the program that opened it: \(message)")
            response = .deny(errno)
        case .changedLocally:
            response = .allow
        }
        completed(outcome)
        slowLogged.withLock { _ = $0.remove(identity) }
        let waiting = inFlight.withLock { $0.removeValue(forKey: identity) ?? [] }
        for waiter in waiting { answer(waiter.event, response) }
    }

    func answer(_ event: FanotifyEvent, _ response: FanotifyResponse) {
        do {
            try group.respond(to: event, response)
        } catch {
            log.error("real-name placeholders: cannot answer the kernel: \(error)")
        }
        try? event.file.close()
    }

    /// The errno a reader gets when the fill failed: the disk's own for a full disk, EIO else.
    static func errno(for error: any Error) -> Errno {
        let found = Errno(of: error)
        if let found, found.isOutOfSpace { return found }
        return .ioError
    }
}
