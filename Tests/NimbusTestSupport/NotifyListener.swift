import Foundation
import NimbusSystem

/// The `$NOTIFY_SOCKET` of a daemon, read all the time from a thread of its own as systemd
/// does: the daemon's `sendto` blocks once the socket's queue is full (a Unix datagram socket
/// holds only `net.unix.max_dgram_qlen` unread messages, 10 by default).
///
/// Who owns what: the reading thread and the test's thread share the `var`s below, only
/// under `condition`; `socket` is read by the reading thread alone. `@unchecked Sendable` for
/// those lock-guarded `var`s.
public final class NotifyListener: @unchecked Sendable {
    private let socket: UnixDatagramSocket
    private let condition = NSCondition()
    private var ready = 0
    private var lastReady: ContinuousClock.Instant?
    private var messages: [String] = []
    private var stopping = false

    /// Binds `path` (a name starting with `@` is in the abstract namespace) and starts reading.
    public init(path: String) throws {
        unlink(path)
        socket = try UnixDatagramSocket.bound(to: path)
        let thread = Thread { [self] in
            while !condition.withLock({ stopping }) {
                guard let message = try? socket.receive(timeout: .milliseconds(100)) else { continue }
                let received = ContinuousClock.now
                let text = String(decoding: message, as: UTF8.self)
                condition.withLock {
                    if text.split(separator: "\n").contains("READY=1") {
                        ready += 1
                        lastReady = received
                        condition.broadcast()
                    }
                    messages.append(text.replacingOccurrences(of: "\n", with: " "))
                    if messages.count > 50 { messages.removeFirst() }
                }
            }
            socket.close()
        }
        thread.name = "nimbus-notify-listener"
        thread.start()
    }

    /// How many READY=1 arrived so far.
    public var readyCount: Int { condition.withLock { ready } }
    /// When the last READY=1 arrived.
    public var lastReadyAt: ContinuousClock.Instant? { condition.withLock { lastReady } }
    /// The last 50 messages (READY, STATUS, STOPPING…), for diagnostics.
    public var recent: [String] { condition.withLock { messages } }

    /// Blocks until more than `count` READY=1 have arrived, or `deadline` passes (false then).
    public func waitForReady(moreThan count: Int, until deadline: ContinuousClock.Instant) -> Bool {
        condition.withLock {
            while ready <= count {
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero else { return false }
                _ = condition.wait(until: Date(timeIntervalSinceNow: min(left, .milliseconds(200)).seconds))
            }
            return true
        }
    }

    /// The reading thread ends within 100 ms and closes the socket.
    public func stop() { condition.withLock { stopping = true } }
}
