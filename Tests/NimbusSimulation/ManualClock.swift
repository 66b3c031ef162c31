import NimbusVocabulary
import Synchronization

/// Time that moves only when a test says so. It stands for both the monotonic and the wall
/// clock (they read the same here: nanoseconds since the epoch).
///
/// Because nothing advances on its own, two writes between `advance` calls get the same
/// mtime — as two writes within one kernel timestamp tick do on a real disk — so an engine
/// that trusts size+mtime alone can be caught out deliberately.
public final class ManualClock: TimeSource {
    private let current: Mutex<WallInstant>

    /// Starts at `start`; the default is in November 2023, so that times look like real ones
    /// in logs.
    public init(start: WallInstant = .origin + .seconds(1_700_000_000)) {
        current = Mutex(start)
    }

    public var wallNow: WallInstant { current.withLock { $0 } }
    public var monotonicNow: MonotonicInstant { MonotonicInstant(nanoseconds: wallNow.nanoseconds) }

    /// Moves time forward; it never goes back.
    public func advance(by interval: Duration) {
        precondition(interval >= .zero, "a ManualClock only moves forward (asked to move by \(interval))")
        current.withLock { $0 += interval }
    }

    /// Now as file-mtime nanoseconds, for `MemoryFileSystem(time:)`.
    public var timeSource: @Sendable () -> Int64 { { [self] in wallNow.nanoseconds } }
}
