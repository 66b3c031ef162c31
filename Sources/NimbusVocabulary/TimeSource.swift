/// Time as the engine sees it: injected, so simulations can move it by hand. Named so that
/// it does not hide the standard library's `Clock`.
public protocol TimeSource: Sendable {
    /// Monotonic nanoseconds, for timeouts and quiet periods.
    var monotonicNow: Int64 { get }
    /// Wall-clock nanoseconds since the epoch, for names and retention.
    var wallNow: Int64 { get }
}
