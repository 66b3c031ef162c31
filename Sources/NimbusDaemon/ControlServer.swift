import Dispatch
import FoundationEssentials
import NimbusCore
import NimbusProtocol
import NimbusSystem
import NimbusVocabulary
import Synchronization

/// The control socket of `nimbusd` (DESIGN §7, PROTOCOL.md). One thread serves every client
/// with poll(2) over non-blocking sockets; work that may take time runs elsewhere (the engine
/// thread, a few worker queues, lease waits) and its answer comes back through `post`, so no
/// client can make the server — or another client — wait.
///
/// Who owns what: the server thread (`run`) owns the clients, the poll set and everything
/// marked "Server thread only" below, and the `handler`. Other threads reach it through
/// `post` (a `Mutex`-guarded inbox plus a wake pipe); `watcherCount` and `stopRequested` are
/// atomics. `@unchecked Sendable` for those thread-owned `var`s.
public final class ControlServer: @unchecked Sendable {
    public struct Limits: Sendable {
        /// Bytes that may wait for a client. A `watch` client past it is disconnected; a
        /// client whose answers pile up is not read from until it catches up.
        public var outputLimit = 4 << 20
        /// Requests of one connection waiting for an answer at the same time.
        public var maximumInFlight = 64
        public var maximumClients = 1000
        public init() {}
    }

    let socketPath: String
    let listener: UnixStreamSocket
    let listenerInode: UInt64?
    let log: Logger
    let limits: Limits
    let daemonUID: UInt32
    /// Set right after the stored properties: the handler refers back to the server.
    var handler: ControlHandler!
    let wake: WakePipe

    // Posted from any thread, run on the server thread.
    private let inbox = Mutex(ControlInbox())
    /// Connections that called `watch`: engine events are queued only when this is not 0.
    let watcherCount = Atomic<Int>(0)
    private let stopRequested = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    // Server thread only.
    var clients: [Int32: ControlClientConnection] = [:]
    var clientsByID: [UInt64: ControlClientConnection] = [:]
    var pollSet = PollSet()
    var nextClientID: UInt64 = 0
    var acceptPausedUntil: MonotonicInstant?
    var readBuffer = [UInt8](repeating: 0, count: 64 << 10)
    var lastRefusalLogged: MonotonicInstant?
    var refusalsNotLogged = 0
    var events: ControlEventFanOut

    /// Binds the socket (creating and checking its directory) without serving yet.
    public init(socketPath: String, setup: ControlSetup, log: Logger, limits: Limits = Limits()) throws {
        self.socketPath = socketPath
        self.log = log
        self.limits = limits
        self.daemonUID = ProcessSupport.userID
        ProcessSupport.ignoreBrokenPipes()
        try ControlSocketDirectory.prepare(forSocket: socketPath, uid: daemonUID)
        listener = try UnixStreamSocket.listen(at: socketPath)
        listenerInode = try? UnixStreamSocket.ownership(of: socketPath)?.inode
        wake = try WakePipe()
        events = ControlEventFanOut()
        handler = ControlHandler(setup: setup, server: self)
    }

    /// Starts the server thread and subscribes to the engine's events.
    public func start() {
        handler.view.onEvent { [weak self] event in self?.engineEvent(event) }
        ProcessSupport.detachThread(name: "nimbus-control") { [self] in run() }
        log.info("control socket: \(socketPath)")
    }

    /// Stops serving, closes every connection (releasing their leases) and removes the socket.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        wake.wake()
        _ = finished.wait(timeout: .now() + 5)
        handler.view.onEvent(nil)
        if let inode = listenerInode { UnixStreamSocket.removeSocketFile(socketPath, inode: inode) }
    }

    /// Runs `work` on the server thread soon. Safe from any thread.
    func post(_ work: @escaping @Sendable (ControlServer) -> Void) {
        inbox.withLock { $0.work.append(work) }
        wake.wake()
    }

    private func engineEvent(_ event: EngineEvent) {
        guard watcherCount.load(ordering: .relaxed) > 0 else { return }
        let now = SystemClock()
        inbox.withLock { $0.add(event, wall: now.wallNow, monotonic: now.monotonicNow) }
        wake.wake()
    }

    // MARK: - The loop

    private func run() {
        pollSet.set(listener.descriptor, .readable)
        pollSet.set(wake.readEnd, .readable)
        while !stopRequested.load(ordering: .acquiring) {
            let timeout = acceptPausedUntil.map { min($0 - SystemClock().monotonicNow, .seconds(1)) }
            let ready: [(FileDescriptor, PollEvents)]
            do {
                ready = try pollSet.wait(timeout: timeout)
            } catch {
                log.error("control socket: poll failed: \(error)")
                ProcessSupport.pause(for: .milliseconds(100))
                continue
            }
            for (descriptor, what) in ready {
                if descriptor == listener.descriptor {
                    acceptAll()
                } else if descriptor == wake.readEnd {
                    wake.drain()
                } else if let client = clients[descriptor.rawValue] {
                    service(client, what)
                }
            }
            runInbox()
            if let until = acceptPausedUntil, SystemClock().monotonicNow >= until {
                acceptPausedUntil = nil
                pollSet.set(listener.descriptor, .readable)
            }
        }
        for client in Array(clients.values) { close(client, reason: nil) }
        listener.close()
        finished.signal()
    }

    private func runInbox() {
        let (work, batch) = inbox.withLock { box -> ([@Sendable (ControlServer) -> Void], ControlInbox.Events) in
            defer { box.work = []; box.events = .init() }
            return (box.work, box.events)
        }
        for item in work { item(self) }
        if !batch.items.isEmpty || batch.dropped { deliver(batch) }
    }
}

/// Work and engine events posted to the server thread.
struct ControlInbox {
    struct Events {
        var items: [(event: EngineEvent, wall: WallInstant, monotonic: MonotonicInstant)] = []
        /// Events were dropped because too many were waiting.
        var dropped = false
    }

    /// Events waiting beyond this are dropped and replaced by one `overflow` event.
    static let maximumEvents = 100_000

    var work: [@Sendable (ControlServer) -> Void] = []
    var events = Events()

    mutating func add(_ event: EngineEvent, wall: WallInstant, monotonic: MonotonicInstant) {
        if events.items.count >= Self.maximumEvents {
            events.dropped = true
        } else {
            events.items.append((event, wall, monotonic))
        }
    }
}
