/// A token bucket for downloads triggered by opening placeholders (DESIGN §5): up to `limit`
/// at once, refilled at `limit` per minute. A storm of opens (a `grep -r`, an indexer) gets
/// the bucket's worth and no more; the caller logs the first refusal of each storm only.
public struct RateLimiter: Sendable {
    public enum Decision: Equatable, Sendable {
        case allowed
        /// `firstOfStorm`: no refusal since the bucket was last full again.
        case refused(firstOfStorm: Bool)
    }

    public var limit: Int
    private var tokens: Double
    private var updated: Int64?
    private var inStorm = false
    /// The time to refill an empty bucket.
    static let period: Duration = .seconds(60)
    /// `period` in nanoseconds, the unit of `now`.
    private static let periodNanoseconds = Double(period.components.seconds) * 1e9
        + Double(period.components.attoseconds) / 1e9

    public init(limit: Int) {
        self.limit = limit
        tokens = Double(limit)
    }

    /// Whether one more download may start at monotonic time `now` (ns).
    public mutating func admit(now: Int64) -> Decision {
        if let updated, now > updated {
            tokens = min(Double(limit), tokens + Double(now - updated) * Double(limit) / Self.periodNanoseconds)
        }
        updated = now
        if tokens >= Double(limit) { inStorm = false }
        guard tokens < 1 else {
            tokens -= 1
            return .allowed
        }
        defer { inStorm = true }
        return .refused(firstOfStorm: !inStorm)
    }
}
