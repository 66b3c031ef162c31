/// Time as the engine sees it: injected, so simulations can move it by hand. Named so that
/// it does not hide the standard library's `Clock`.
public protocol TimeSource: Sendable {
    /// Now on the monotonic clock, for timeouts and quiet periods.
    var monotonicNow: MonotonicInstant { get }
    /// Now on the wall clock, for names and retention.
    var wallNow: WallInstant { get }
}

/// A point in time counted in nanoseconds from some origin. The two kinds, monotonic and
/// wall, are different types so that one cannot be compared with the other by mistake.
/// (Swift's `ContinuousClock.Instant` cannot be made from a number, which a manual clock
/// and the kernel's timespec need.) Arithmetic saturates instead of trapping: a deadline a
/// thousand years out is "never", not a crash.
public protocol TimeInstant: Comparable, Hashable, Sendable {
    /// Nanoseconds since the clock's origin.
    var nanoseconds: Int64 { get }
    init(nanoseconds: Int64)
}

extension TimeInstant {
    /// The clock's origin, before any `now`: a deadline set to it is due at once.
    public static var origin: Self { Self(nanoseconds: 0) }

    /// Later than any real time: what sorts last.
    public static var distantFuture: Self { Self(nanoseconds: .max) }

    public static func < (earlier: Self, later: Self) -> Bool { earlier.nanoseconds < later.nanoseconds }

    public static func + (instant: Self, interval: Duration) -> Self {
        Self(nanoseconds: instant.nanoseconds.addingSaturated(interval.nanosecondCount))
    }

    public static func - (instant: Self, interval: Duration) -> Self {
        Self(nanoseconds: instant.nanoseconds.subtractingSaturated(interval.nanosecondCount))
    }

    public static func += (instant: inout Self, interval: Duration) { instant = instant + interval }

    /// The interval from `earlier` to `later` (negative if `later` is earlier).
    public static func - (later: Self, earlier: Self) -> Duration {
        // Int64 - Int64 can overflow Int64 but never Duration's 128 bits.
        .nanoseconds(Int128(later.nanoseconds) - Int128(earlier.nanoseconds))
    }

    /// How long ago `earlier` was.
    public func duration(since earlier: Self) -> Duration { self - earlier }
}

/// A point on the monotonic clock (CLOCK_MONOTONIC's nanoseconds, or a manual clock's).
public struct MonotonicInstant: TimeInstant {
    public var nanoseconds: Int64
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
}

/// A point on the wall clock: nanoseconds since the Unix epoch, the unit of file mtimes.
public struct WallInstant: TimeInstant {
    public var nanoseconds: Int64
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    /// The instant a file mtime (nanoseconds since the epoch) stands for.
    public init(mtime: Int64) { nanoseconds = mtime }

    /// Whole seconds since the epoch, rounded down (also before 1970).
    public var secondsSinceEpoch: Int64 { nanoseconds.floorDivided(by: Duration.nanosecondsPerSecond) }

    /// The nanoseconds past `secondsSinceEpoch`, 0 up to 999 999 999.
    public var nanosecondsIntoSecond: Int64 { nanoseconds - secondsSinceEpoch * Duration.nanosecondsPerSecond }
}

extension Duration {
    // The one place intervals meet counts of nanoseconds, microseconds and milliseconds: the
    // kernel's timespec and systemd's MONOTONIC_USEC convert with these, not with literals.
    // (Inlinable: every stat's times are converted with them.)
    @inlinable public static var nanosecondsPerSecond: Int64 { 1_000_000_000 }
    @inlinable public static var nanosecondsPerMillisecond: Int64 { 1_000_000 }
    @inlinable public static var nanosecondsPerMicrosecond: Int64 { 1_000 }
    private static let attosecondsPerNanosecond: Int64 = 1_000_000_000

    /// Whole nanoseconds, truncated toward zero, saturating at Int64's range (292 years).
    public var nanosecondCount: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: Self.nanosecondsPerSecond)
        if overflow { return seconds < 0 ? .min : .max }
        return whole.addingSaturated(attoseconds / Self.attosecondsPerNanosecond)
    }

    /// Whole seconds, truncated toward zero, for messages such as "every 30 s".
    public var wholeSeconds: Int64 { components.seconds }

    /// `count` days of 86 400 seconds.
    public static func days(_ count: Int64) -> Duration { .seconds(count * 86_400) }

    /// `count` hours.
    public static func hours(_ count: Int64) -> Duration { .seconds(count * 3_600) }

    /// `count` minutes.
    public static func minutes(_ count: Int64) -> Duration { .seconds(count * 60) }

    /// A timeout for poll(2) and the like: milliseconds rounded UP, so that a deadline 0.5 ms
    /// away waits 1 ms rather than spinning on 0; clamped to `0...limit`.
    public func pollMilliseconds(atMost limit: Int32 = .max) -> Int32 {
        let nanoseconds = nanosecondCount
        if nanoseconds <= 0 { return 0 }
        let (whole, rest) = nanoseconds.quotientAndRemainder(dividingBy: Self.nanosecondsPerMillisecond)
        let milliseconds = rest == 0 ? whole : whole + 1
        return Int32(clamping: min(milliseconds, Int64(limit)))
    }
}

extension Int64 {
    /// `self + other`, or the nearest bound instead of trapping.
    func addingSaturated(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other < 0 ? .min : .max
    }

    /// `self - other`, or the nearest bound instead of trapping.
    func subtractingSaturated(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return difference }
        return other > 0 ? .min : .max
    }

    /// Division rounding toward minus infinity (-1 ns is in the second before the epoch).
    func floorDivided(by divisor: Int64) -> Int64 {
        let (quotient, remainder) = quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? quotient - 1 : quotient
    }
}
