import NimbusVocabulary

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
    private var updated: MonotonicInstant?
    private var inStorm = false
    /// The time to refill an empty bucket.
    static let period: Duration = .seconds(60)

    public init(limit: Int) {
        self.limit = limit
        tokens = Double(limit)
    }

    /// Whether one more download may start at `now`.
    public mutating func admit(now: MonotonicInstant) -> Decision {
        if let updated, now > updated {
            // Duration / Duration is the Double ratio of the two.
            tokens = min(Double(limit), tokens + (now - updated) / Self.period * Double(limit))
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
