/// A moment as a UTC calendar and clock show it: the proleptic Gregorian date and the time of
/// day, down to the nanosecond. The one place days since 1970 become dates and back (Howard
/// Hinnant's `civil_from_days` / `days_from_civil`, which count in 400-year eras so that no
/// loop walks the years); every time Nimbus writes or reads as text goes through it.
///
/// A time before 1970 counts back from the start of its second: −1.5 s is 23:59:58.5 on
/// 1969-12-31, never 23:59:59.5 (the seconds are rounded down, the fraction is what is past).
public struct CivilTime: Hashable, Sendable {
    public var year: Int64
    /// 1 (January) … 12.
    public var month: Int64
    /// 1 … 31.
    public var day: Int64
    public var hour: Int64
    public var minute: Int64
    public var second: Int64
    /// 0 … 999 999 999.
    public var nanosecond: Int64

    public init(year: Int64, month: Int64, day: Int64, hour: Int64 = 0, minute: Int64 = 0, second: Int64 = 0,
                nanosecond: Int64 = 0) {
        (self.year, self.month, self.day) = (year, month, day)
        (self.hour, self.minute, self.second, self.nanosecond) = (hour, minute, second, nanosecond)
    }

    /// The UTC date and time of `instant` (a file mtime, a wall-clock reading).
    public init(_ instant: WallInstant) {
        self.init(secondsSinceEpoch: instant.secondsSinceEpoch, nanosecond: instant.nanosecondsIntoSecond)
    }

    /// The UTC date and time `seconds` after 1970-01-01 00:00:00 (before it when negative),
    /// plus `nanosecond` (0 … 999 999 999) into that second. Covers every Int64 of seconds,
    /// far beyond what a `WallInstant` holds.
    public init(secondsSinceEpoch seconds: Int64, nanosecond: Int64 = 0) {
        let days = seconds.floorDivided(by: Self.secondsPerDay)
        let secondOfDay = seconds - days * Self.secondsPerDay
        let (year, month, day) = Self.date(daysSinceEpoch: days)
        self.init(year: year, month: month, day: day, hour: secondOfDay / 3600, minute: secondOfDay % 3600 / 60,
                  second: secondOfDay % 60, nanosecond: nanosecond)
    }

    static let secondsPerDay: Int64 = 86_400

    /// Days from 1970-01-01 to this date (negative before it).
    public var daysSinceEpoch: Int64 { Self.daysSinceEpoch(year: year, month: month, day: day) }

    /// Seconds from 1970-01-01 00:00:00 to the start of this second.
    public var secondsSinceEpoch: Int64 { daysSinceEpoch * Self.secondsPerDay + hour * 3600 + minute * 60 + second }

    /// The instant this date and time is (saturating past the years a `WallInstant` holds,
    /// 1677 … 2262).
    public var instant: WallInstant {
        WallInstant.origin + .seconds(secondsSinceEpoch) + .nanoseconds(nanosecond)
    }

    /// Year, month (1 … 12) and day (1 … 31) of the day `days` after 1970-01-01.
    public static func date(daysSinceEpoch days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        // Counted from 0000-03-01, so that a leap day ends its year; 146 097 days per era.
        let shifted = days + 719_468
        let era = shifted.floorDivided(by: 146_097)
        let dayOfEra = shifted - era * 146_097                                                     // 0 … 146 096
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365  // 0 … 399
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)             // 0 … 365
        let monthFromMarch = (5 * dayOfYear + 2) / 153                                            // 0 … 11
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Days from 1970-01-01 to a date (the inverse of `date(daysSinceEpoch:)`). A day past the
    /// end of its month runs on into the next one, as `mktime` does.
    public static func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
        let yearFromMarch = month <= 2 ? year - 1 : year
        let era = yearFromMarch.floorDivided(by: 400)
        let yearOfEra = yearFromMarch - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    // MARK: - As text

    /// `2026-11-21T16:22:37.123456789Z` (RFC 3339 in UTC) with `fractionDigits` digits of the
    /// second (0 … 9, truncated; none and no dot for 0). Built byte by byte: listings write
    /// thousands of these.
    public func rfc3339(fractionDigits: Int = 9) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(32)
        appendDate(to: &text)
        text.append(UInt8(ascii: "T"))
        appendClock(separator: [UInt8(ascii: ":")], to: &text)
        let digits = min(max(fractionDigits, 0), 9)
        if digits > 0 {
            var scale: Int64 = 1
            for _ in digits..<9 { scale *= 10 }
            text.append(UInt8(ascii: "."))
            Self.append(nanosecond / scale, width: digits, to: &text)
        }
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }

    /// `2026-11-21`: the year in at least four digits, with a minus sign before year 0.
    public var dateText: String {
        var text: [UInt8] = []
        appendDate(to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// `16:22:37`, or `162237` with an empty separator.
    public func clockText(separator: String = ":") -> String {
        var text: [UInt8] = []
        appendClock(separator: Array(separator.utf8), to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    private func appendDate(to text: inout [UInt8]) {
        if year < 0 { text.append(UInt8(ascii: "-")) }
        Self.append(year.magnitude, width: 4, to: &text)
        text.append(UInt8(ascii: "-"))
        Self.append(month, width: 2, to: &text)
        text.append(UInt8(ascii: "-"))
        Self.append(day, width: 2, to: &text)
    }

    private func appendClock(separator: [UInt8], to text: inout [UInt8]) {
        Self.append(hour, width: 2, to: &text)
        text.append(contentsOf: separator)
        Self.append(minute, width: 2, to: &text)
        text.append(contentsOf: separator)
        Self.append(second, width: 2, to: &text)
    }

    /// The decimal digits of `value` (not negative), zero-padded to at least `width`.
    private static func append(_ value: some BinaryInteger, width: Int, to text: inout [UInt8]) {
        var digits: [UInt8] = []
        var rest = value
        repeat {
            digits.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        if digits.count < width { text.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - digits.count)) }
        text.append(contentsOf: digits.reversed())
    }
}
