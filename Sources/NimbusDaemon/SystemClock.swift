import Dispatch
import Foundation
import NimbusCore

/// The real clock: a monotonic one for waiting, the wall clock for names and retention.
public struct SystemClock: Clock {
    public init() {}
    public var monotonicNow: Int64 { Int64(DispatchTime.now().uptimeNanoseconds) }
    public var wallNow: Int64 { Int64(Date().timeIntervalSince1970 * 1_000_000_000) }
}

/// A queue of messages for the engine thread, which sleeps until one arrives or a deadline
/// passes: no polling, so an idle daemon uses no CPU.
final class Inbox<Message: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var messages: [Message] = []

    func post(_ message: Message) {
        condition.lock()
        messages.append(message)
        condition.signal()
        condition.unlock()
    }

    /// Waits until a message arrives or `deadline` (monotonic ns) passes; returns all queued.
    func wait(until deadline: Int64?, clock: any Clock) -> [Message] {
        condition.lock()
        defer { condition.unlock() }
        while messages.isEmpty {
            guard let deadline else { condition.wait(); continue }
            let remaining = deadline - clock.monotonicNow
            if remaining <= 0 { break }
            _ = condition.wait(until: Date(timeIntervalSinceNow: Double(remaining) / 1e9))
        }
        defer { messages = [] }
        return messages
    }
}
