import Dispatch
import NimbusSystem
import NimbusVocabulary
import Synchronization
import NimbusCore

/// The real clock: a monotonic one for waiting, the wall clock for names and retention.
public struct SystemClock: TimeSource {
    public init() {}
    public var monotonicNow: MonotonicInstant { ProcessSupport.monotonicClock }
    public var wallNow: WallInstant { ProcessSupport.wallClock }
}

/// A queue of messages for the engine thread, which sleeps until one arrives or a deadline
/// passes: no polling, so an idle daemon uses no CPU. Each post signals the semaphore once;
/// a wake-up that finds the queue already drained (an earlier wait took those messages)
/// simply waits again.
final class Inbox<Message: Sendable>: Sendable {
    private let messages = Mutex<[Message]>([])
    private let arrived = DispatchSemaphore(value: 0)

    func post(_ message: Message) {
        messages.withLock { $0.append(message) }
        arrived.signal()
    }

    /// Waits until a message arrives or `deadline` passes; returns all queued.
    func wait(until deadline: MonotonicInstant?, clock: any TimeSource) -> [Message] {
        while true {
            let taken = messages.withLock { queued in
                defer { queued = [] }
                return queued
            }
            if !taken.isEmpty { return taken }
            guard let deadline else {
                arrived.wait()
                continue
            }
            let remaining = deadline - clock.monotonicNow
            if remaining <= .zero { return [] }
            if arrived.wait(timeout: .now() + .nanoseconds(Int(remaining.nanosecondCount))) == .timedOut {
                return messages.withLock { queued in
                    defer { queued = [] }
                    return queued
                }
            }
        }
    }
}
