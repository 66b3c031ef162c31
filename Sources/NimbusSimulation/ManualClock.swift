import NimbusVocabulary
import Synchronization

/// Time that moves only when a test says so. It stands for both the monotonic and the wall
/// clock (they are the same here), in nanoseconds since the epoch.
///
/// Because nothing advances on its own, two writes between `advance` calls get the same
/// mtime — as two writes within one kernel timestamp tick do on a real disk — so an engine
/// that trusts size+mtime alone can be caught out deliberately.
public final class ManualClock: TimeSource {
    private let current: Mutex<Int64>

    /// Starts at `start` nanoseconds since the epoch; the default is in November 2023, so
    /// that times look like real ones in logs.
    public init(start: Int64 = 1_700_000_000_000_000_000) {
        current = Mutex(start)
    }

    public var now: Int64 { current.withLock { $0 } }
    public var monotonicNow: Int64 { now }
    public var wallNow: Int64 { now }

    /// Moves time forward; it never goes back.
    public func advance(by nanoseconds: Int64) {
        precondition(nanoseconds >= 0, "a ManualClock only moves forward (asked to move by \(nanoseconds) ns)")
        current.withLock { $0 += nanoseconds }
    }

    /// `now` as a closure, for `MemoryFileSystem(time:)`.
    public var timeSource: @Sendable () -> Int64 { { [self] in now } }
}
