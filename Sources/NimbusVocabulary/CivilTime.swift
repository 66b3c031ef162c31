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
    /// second (0 … 9, truncated; none and no dot for 0). Written straight into the string's
    /// storage: listings write thousands of these.
    public func rfc3339(fractionDigits: Int = 9) -> String {
        let digits = min(max(fractionDigits, 0), 9)
        var scale: Int64 = 1
        for _ in digits..<9 { scale *= 10 }
        let clockStart = dateLength + 1
        let length = clockStart + 8 + (digits > 0 ? 1 + digits : 0) + 1
        return String(unsafeUninitializedCapacity: length) { text in
            writeDate(into: text)
            text[clockStart - 1] = UInt8(ascii: "T")
            writeClock(separator: [UInt8(ascii: ":")], into: text, at: clockStart)
            if digits > 0 {
                text[clockStart + 8] = UInt8(ascii: ".")
                Self.put(nanosecond / scale, width: digits, into: text, at: clockStart + 9)
            }
            text[length - 1] = UInt8(ascii: "Z")
            return length
        }
    }

    /// `2026-11-21`: the year in at least four digits, with a minus sign before year 0.
    public var dateText: String {
        String(unsafeUninitializedCapacity: dateLength) { text in
            writeDate(into: text)
            return dateLength
        }
    }

    /// `16:22:37`, or `162237` with an empty separator.
    public func clockText(separator: String = ":") -> String {
        let separator = Array(separator.utf8)
        let length = 6 + 2 * separator.count
        return String(unsafeUninitializedCapacity: length) { text in
            writeClock(separator: separator, into: text, at: 0)
            return length
        }
    }

    /// How many digits the year takes (at least four), and its minus sign.
    private var yearLength: Int {
        var count = 1
        var rest = year.magnitude / 10
        while rest > 0 { count += 1; rest /= 10 }
        return max(4, count) + (year < 0 ? 1 : 0)
    }

    /// `YYYY-MM-DD`'s length.
    private var dateLength: Int { yearLength + 6 }

    private func writeDate(into text: UnsafeMutableBufferPointer<UInt8>) {
        let yearLength = yearLength
        if year < 0 { text[0] = UInt8(ascii: "-") }
        Self.put(Int64(clamping: year.magnitude), width: yearLength - (year < 0 ? 1 : 0), into: text, at: year < 0 ? 1 : 0)
        text[yearLength] = UInt8(ascii: "-")
        Self.put(month, width: 2, into: text, at: yearLength + 1)
        text[yearLength + 3] = UInt8(ascii: "-")
        Self.put(day, width: 2, into: text, at: yearLength + 4)
    }

    /// `HH`, `MM` and `SS` with `separator` between them, from `start`.
    private func writeClock(separator: [UInt8], into text: UnsafeMutableBufferPointer<UInt8>, at start: Int) {
        let step = 2 + separator.count
        for (index, value) in [(0, hour), (1, minute), (2, second)] {
            Self.put(value, width: 2, into: text, at: start + index * step)
        }
        for index in 0..<2 {
            for (offset, byte) in separator.enumerated() { text[start + index * step + 2 + offset] = byte }
        }
    }

    /// Exactly `width` decimal digits of `value` (not negative, and fitting) from `start`.
    private static func put(_ value: Int64, width: Int, into text: UnsafeMutableBufferPointer<UInt8>, at start: Int) {
        var rest = value
        for index in stride(from: start + width - 1, through: start, by: -1) {
            text[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
    }
}
