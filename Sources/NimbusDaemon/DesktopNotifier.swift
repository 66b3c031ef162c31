import Dispatch
import FoundationEssentials
import NimbusCore
import NimbusSystem
import NimbusVocabulary
import Synchronization

/// Desktop notifications over the session bus (`[desktop] notifications`). The engine only
/// hands events over (`post`, never blocking); a thread of this notifier filters them
/// (`DesktopAlertFilter`), talks D-Bus, and carries out the actions the user clicks. A bus
/// that is absent, slow or broken costs a log line and a short timeout, never the sync:
/// after a failure the next notification tries again, at most once a minute.
///
/// Who owns what: the notifier's thread (`run`) owns the `var`s below (the filter, the bus
/// connection, what is shown); the engine and the control threads reach it only through
/// `post`, `setEnabled` and `stop`, which touch the `Mutex`es, the atomics and the wake pipe.
/// `@unchecked Sendable` for those thread-owned `var`s.
final class DesktopNotifier: @unchecked Sendable {
    /// What the actions do; called on the notifier's thread.
    struct Actions: Sendable {
        /// Confirms (true) or reverts the held deletions if they are still exactly `paths`,
        /// then says what came of it through `outcome`.
        var decideDeletes: @Sendable (_ confirm: Bool, _ paths: Set<RelativePath>,
                                      _ outcome: @escaping @Sendable (DesktopAlert) -> Void) -> Void
        var openFolder: @Sendable (String) -> Void
    }

    private let socketPath: String
    private let log: Logger
    private let actions: Actions
    private let enabled: Atomic<Bool>
    private let inbox = Mutex<(events: [EngineEvent], dropped: Int)>(([], 0))
    /// Notifications to show as they are: what came of a button.
    private let outcomes = Mutex<[DesktopAlert]>([])
    /// The filter's `erroredPaths`, for `post` to pass on only the state changes that matter.
    private let erroredPaths = Mutex<Set<RelativePath>>([])
    private let wake: WakePipe
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    /// Touched only on the notifier's thread.
    private var filter: DesktopAlertFilter
    private var connection: DBusConnection?
    private var capabilities: Set<String> = []
    private var shown: [UInt32: DesktopAlert] = [:]
    private var retryAfter = MonotonicInstant.origin
    private var failureLogged = false

    static let inboxLimit = 10_000
    static let retryInterval: Duration = .seconds(60)

    /// Nil, with the reason logged, when there is no session bus to talk to (a system service).
    static func start(environment: [String: String], enabled: Bool, filter: DesktopAlertFilter, log: Logger,
                      actions: Actions) -> DesktopNotifier? {
        let socketPath: String
        do {
            // $XDG_RUNTIME_DIR/bus is taken even before it exists: a daemon started at boot
            // (nimbusd-user@.service) sees the user's session bus appear when they log in.
            socketPath = try DBusAddress.sessionSocket(environment: environment) { _ in true }
        } catch {
            log.info("desktop notifications: off (\(error))")
            return nil
        }
        guard let wake = try? WakePipe() else { return nil }
        let notifier = DesktopNotifier(socketPath: socketPath, enabled: enabled, filter: filter, wake: wake, log: log, actions: actions)
        ProcessSupport.detachThread(name: "nimbus-desktop") { notifier.run() }
        log.info("desktop notifications: \(enabled ? "on" : "off (notifications = off)"), session bus \(socketPath)")
        return notifier
    }

    private init(socketPath: String, enabled: Bool, filter: DesktopAlertFilter, wake: WakePipe, log: Logger, actions: Actions) {
        self.socketPath = socketPath
        self.enabled = Atomic(enabled)
        self.filter = filter
        self.wake = wake
        self.log = log
        self.actions = actions
    }

    /// `[desktop] notifications` changed (reload).
    func setEnabled(_ on: Bool) { enabled.store(on, ordering: .relaxed) }

    /// Hands an engine event over; cheap, never waits for the bus. Progress and other state
    /// changes matter only to paths told about in an error (the filter forgets them when fine).
    func post(_ event: EngineEvent) {
        guard enabled.load(ordering: .relaxed) else { return }
        switch event {
        case .stateChanged(let path, _), .removed(let path, _):
            guard erroredPaths.withLock({ !$0.isEmpty && $0.contains(path) }) else { return }
        default:
            break
        }
        let queued = inbox.withLock { box -> Bool in
            guard box.events.count < Self.inboxLimit else { box.dropped += 1; return false }
            box.events.append(event)
            return true
        }
        if queued { wake.wake() }
    }

    func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        wake.wake()
        _ = finished.wait(timeout: .now() + 5)
    }

    // MARK: - The notifier's thread

    private func run() {
        defer {
            connection?.close()
            finished.signal()
        }
        while !stopping.load(ordering: .sequentiallyConsistent) {
            var polls = PollSet()
            polls.set(wake.readEnd, .readable)
            if let connection { polls.set(connection.socket.descriptor, .readable) }
            let now = ProcessSupport.monotonicClock
            let ready = (try? polls.wait(timeout: filter.nextDeadline.map { $0 - now })) ?? []
            wake.drain()
            let (events, dropped) = inbox.withLock { box in defer { box = ([], 0) }; return box }
            if dropped > 0 { log.debug("desktop notifications: \(dropped) engine events were dropped (the notifier fell behind)") }
            let current = ProcessSupport.monotonicClock
            var alerts = outcomes.withLock { list in defer { list = [] }; return list }
            for event in events { alerts += filter.absorb(event, now: current) }
            alerts += filter.due(now: current)
            if !events.isEmpty { erroredPaths.withLock { $0 = filter.erroredPaths } }
            for alert in alerts where enabled.load(ordering: .relaxed) { show(alert) }
            if connection != nil, !ready.isEmpty || !alerts.isEmpty { readSignals() }
        }
    }

    private func show(_ alert: DesktopAlert) {
        guard let connection = connected() else {
            log.info("desktop notification not shown (no session bus): \(alert.summary)")
            return
        }
        let markup = capabilities.contains("body-markup")
        var notification = DesktopNotification(summary: alert.summary,
                                               body: markup ? NotificationsClient.escapeMarkup(alert.body) : alert.body)
        notification.icon = alert.urgency >= 2 ? "dialog-warning" : "dialog-information"
        notification.urgency = alert.urgency
        notification.replacesID = alert.replacesID
        if capabilities.contains("actions") {
            notification.actions = alert.actions.map { ($0.rawValue, $0.label) }
            // The "default" action is a click on the notification itself: only for harmless ones.
            if alert.actions.contains(.showConflict) { notification.actions.append(("default", DesktopAction.showConflict.label)) }
        }
        do {
            let id = try NotificationsClient.notify(notification, on: connection)
            // An outcome without buttons takes the place of the one whose button was pressed.
            shown[id] = alert.actions.isEmpty ? nil : alert
            log.debug("desktop notification \(id): \(alert.summary)")
        } catch {
            failed(error)
        }
    }

    /// The connection, made now if needed (at most once a minute after a failure).
    private func connected() -> DBusConnection? {
        if let connection { return connection }
        guard ProcessSupport.monotonicClock >= retryAfter else { return nil }
        do {
            let connection = try DBusConnection.connect(socketPath: socketPath, uid: ProcessSupport.userID)
            capabilities = Set(try NotificationsClient.capabilities(on: connection))
            if capabilities.contains("actions") { try NotificationsClient.subscribe(on: connection) }
            self.connection = connection
            if failureLogged { log.notice("desktop notifications: the session bus answers again") }
            failureLogged = false
            return connection
        } catch {
            failed(error)
            return nil
        }
    }

    private func failed(_ error: any Error) {
        connection?.close()
        connection = nil
        shown = [:]
        retryAfter = ProcessSupport.monotonicClock + Self.retryInterval
        if !failureLogged, case DBusError.noBus(let why) = error {
            log.info("desktop notifications: \(why); the next notification tries again (at most once a minute)")
            failureLogged = true
        } else if !failureLogged {
            log.warning("desktop notifications: cannot use the session bus at \(socketPath): \(error); syncing goes on, "
                        + "and the next notification tries again (at most once a minute)")
            failureLogged = true
        } else {
            log.debug("desktop notifications: still no session bus: \(error)")
        }
    }

    private func readSignals() {
        guard let connection else { return }
        do {
            while let message = try connection.nextMessage(within: .zero) {
                switch NotificationsClient.signal(in: message) {
                case .actionInvoked(let id, let key)?:
                    guard let alert = shown[id] else { continue }
                    invoke(key == "default" ? DesktopAction.showConflict.rawValue : key, of: alert, id: id)
                case .closed(let id, _)?:
                    shown[id] = nil
                case nil:
                    continue
                }
            }
        } catch {
            failed(error)
        }
    }

    private func invoke(_ key: String, of alert: DesktopAlert, id: UInt32) {
        guard let action = DesktopAction(rawValue: key), alert.actions.contains(action) else { return }
        log.notice("desktop notification \"\(alert.summary)\": \(action.label) chosen")
        // The outcome takes the place of the notification whose button was pressed.
        let outcome: @Sendable (DesktopAlert) -> Void = { [weak self] result in
            guard let self else { return }
            var result = result
            result.replacesID = id
            outcomes.withLock { $0.append(result) }
            wake.wake()
        }
        switch action {
        case .confirmDeletes: actions.decideDeletes(true, alert.heldPaths, outcome)
        case .revertDeletes: actions.decideDeletes(false, alert.heldPaths, outcome)
        case .showConflict: if let folder = alert.folder { actions.openFolder(folder) }
        }
    }
}

/// "Show conflict": the file manager on a folder, through `xdg-open` (or `gio open`).
enum FolderOpener {
    static func open(_ folder: String, log: Logger) {
        for (program, arguments) in [("xdg-open", [folder]), ("gio", ["open", folder])] {
            guard let pid = try? ChildProcess.spawn(program, arguments: arguments) else { continue }
            // Reaped in the background: a file manager may take its time to hand over.
            DispatchQueue.global().async {
                if let status = try? ChildProcess.wait(pid), status != 0 {
                    log.warning("\(program) \(ShellWord.command(arguments)) exited with status \(status)")
                }
            }
            return
        }
        log.warning("cannot open \(folder): neither xdg-open nor gio is installed")
    }
}
