import FoundationEssentials
import NimbusSystem
import NimbusVocabulary
import Synchronization

/// systemd's notification protocol, in our own code (DESIGN §8): datagrams to `$NOTIFY_SOCKET`.
/// Without that variable (not started by systemd) every call does nothing.
public final class SystemdNotifier: Sendable {
    let path: String?
    let socket: UnixDatagramSocket?
    /// Half of `$WATCHDOG_USEC`, when systemd wants keep-alive pings.
    public let watchdogInterval: Duration?
    /// Whether STOPPING=1 was sent: READY=1 is never sent after it (a SIGTERM during the
    /// first pass, or during a reload). Held while either is sent, so the signal thread's
    /// STOPPING=1 cannot fall between the engine thread's look at it and its READY=1.
    let stopped = Mutex(false)

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socket = path == nil ? nil : try? UnixDatagramSocket()
        watchdogInterval = environment["WATCHDOG_USEC"].flatMap(Int64.init).map { Duration.microseconds($0) / 2 }
    }

    public func notify(_ fields: String) {
        guard let path, let socket else { return }
        try? socket.send(Array(fields.utf8), to: path)
    }

    /// Hands systemd a duplicate of `descriptor` to keep for the next start of this unit
    /// (`FDSTORE=1`; the unit needs `FileDescriptorStoreMax=`), which gets it back as `name`
    /// in `LISTEN_FDS`/`LISTEN_FDNAMES`.
    public func storeDescriptor(_ descriptor: FileDescriptor, name: String) {
        guard let path, let socket else { return }
        try? socket.send(Array("FDSTORE=1\nFDNAME=\(name)".utf8), passing: descriptor, to: path)
    }

    /// Asks systemd to close what it keeps as `name`.
    public func removeStoredDescriptor(name: String) { notify("FDSTOREREMOVE=1\nFDNAME=\(name)") }

    public func ready(status: String) {
        stopped.withLock { stopped in if !stopped { notify("READY=1\nSTATUS=\(status)") } }
    }
    public func status(_ text: String) { notify("STATUS=\(text)") }
    public func watchdog() { notify("WATCHDOG=1") }
    public func stopping() {
        stopped.withLock { stopped in
            stopped = true
            notify("STOPPING=1")
        }
    }

    /// `RELOADING=1` must carry the monotonic time, in microseconds, for `Type=notify-reload`.
    public func reloading(at now: MonotonicInstant) {
        notify("RELOADING=1\nMONOTONIC_USEC=\(now.nanoseconds / Duration.nanosecondsPerMicrosecond)")
    }
}
