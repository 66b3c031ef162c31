import NimbusVocabulary

/// Numbers and times the way people read them. Pure functions, so the tests pin them down.
enum Format {
    /// Decimal units, as file managers on Linux show them: "512 B", "1.2 MB", "12.3 GB",
    /// "123 kB". One decimal below 100, none above, and never "1000 kB" (that is "1.0 MB").
    static func size(_ bytes: Int64) -> String {
        if bytes < 0 { return "-" + size(-bytes) }
        if bytes < 1000 { return "\(bytes) B" }
        let units = ["kB", "MB", "GB", "TB", "PB", "EB"]
        var value = Double(bytes) / 1000
        var unit = 0
        // Move up a unit when rounding would print 1000 or more.
        while unit < units.count - 1, rounded(value) >= 1000 {
            value /= 1000
            unit += 1
        }
        return "\(number(value)) \(units[unit])"
    }

    static func rounded(_ value: Double) -> Double {
        value < 100 ? (value * 10).rounded() / 10 : value.rounded()
    }

    /// "1.2" or "123": one decimal below 100.
    static func number(_ value: Double) -> String {
        let r = rounded(value)
        if r >= 100 { return String(Int64(r)) }
        let tenths = Int64((r * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// "just now", "42 s ago", "3 min ago", "5 h ago", "yesterday", "12 days ago", then the
    /// date. A time in the future (a clock ahead on another machine) reads "in 3 min".
    static func relativeTime(_ seconds: Double, now: Double) -> String {
        let delta = now - seconds
        if abs(delta) < 5 { return "just now" }
        if delta < 0 { return "in " + span(-delta) }
        if delta >= 86_400, delta < 2 * 86_400 { return "yesterday" }
        if delta >= 30 * 86_400 { return date(seconds) }
        return span(delta) + " ago"
    }

    static func span(_ seconds: Double) -> String {
        let s = Int64(seconds)
        switch s {
        case ..<60: return "\(s) s"
        case ..<3600: return "\(s / 60) min"
        case ..<86_400: return "\(s / 3600) h"
        default:
            let days = s / 86_400
            return days == 1 ? "1 day" : "\(days) days"
        }
    }

    /// "2024-03-01" (UTC) for a time in seconds since 1970.
    static func date(_ seconds: Double) -> String {
        civil(seconds).dateText
    }

    /// "14:03:12" (local time is the caller's business: pass seconds already shifted).
    static func clock(_ seconds: Double) -> String {
        civil(seconds).clockText()
    }

    /// The UTC date and time of the second `seconds` falls in (rounded down, also before 1970).
    static func civil(_ seconds: Double) -> CivilTime {
        // Clamped so that a wild value cannot trap the conversion: ±10¹⁵ s is 30 million years.
        let bounded = seconds.isNaN ? 0 : min(max(seconds.rounded(.down), -1e15), 1e15)
        return CivilTime(secondsSinceEpoch: Int64(bounded))
    }

    /// A time given on the command line (`restore --at`), in ns since 1970: "2024-03-01",
    /// "2024-03-01 14:30[:05[.250]]" or "2024-03-01T14:30[:05[.250]]" in local time, the same
    /// ending in "Z" in UTC, or how long ago: "90s", "30min", "2h", "3d". Nil when it is none
    /// of these. The seconds may have a fraction of up to nine digits: versions are stamped to
    /// the nanosecond, and two displaced within one second are told apart only so.
    static func parseTime(_ text: String, now: Double, utcOffsetSeconds: Int) -> Int64? {
        let trimmed = trimmedOfSpaces(text)
        let units: [(String, Int64)] = [("min", 60), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400), ("w", 604_800)]
        for (unit, seconds) in units where trimmed.hasSuffix(unit) {
            let number = trimmedOfSpaces(String(trimmed.dropLast(unit.count)))
            guard let value = Int64(number), value >= 0 else { continue }
            return (WallInstant.origin + .seconds(now) - .seconds(value * seconds)).nanoseconds
        }
        var rest = Substring(trimmed)
        let utc = rest.hasSuffix("Z")
        if utc { rest = rest.dropLast() }
        let parts = rest.split(whereSeparator: { $0 == " " || $0 == "T" })
        guard (1...2).contains(parts.count) else { return nil }
        let date = parts[0].split(separator: "-", omittingEmptySubsequences: false).map { Int64($0) }
        guard date.count == 3, let year = date[0], let month = date[1], let day = date[2],
              (1...12).contains(month), (1...31).contains(day), parts[0].count == 10 else { return nil }
        var clock: [Int64] = [0, 0, 0]
        var subsecond: Int64 = 0
        if parts.count == 2 {
            var fields = parts[1].split(separator: ":", omittingEmptySubsequences: false)
            if fields.count == 3, let dot = fields[2].firstIndex(of: ".") {
                guard let fraction = nanoseconds(ofFraction: fields[2][fields[2].index(after: dot)...]) else { return nil }
                subsecond = fraction
                fields[2] = fields[2][..<dot]
            }
            let numbers = fields.map { Int64($0) }
            guard (2...3).contains(numbers.count), numbers.allSatisfy({ $0 != nil }) else { return nil }
            for (index, number) in numbers.enumerated() { clock[index] = number! }
            guard clock[0] < 24, clock[1] < 60, clock[2] < 61 else { return nil }
        }
        let days = CivilTime.daysSinceEpoch(year: year, month: month, day: day)
        let seconds = days * 86_400 + clock[0] * 3600 + clock[1] * 60 + clock[2] - (utc ? 0 : Int64(utcOffsetSeconds))
        return (WallInstant.origin + .seconds(seconds) + .nanoseconds(subsecond)).nanoseconds
    }

    /// The nanoseconds a fraction of a second stands for ("25" → 250 000 000): one to nine
    /// digits, nil otherwise.
    private static func nanoseconds(ofFraction digits: Substring) -> Int64? {
        guard (1...9).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }),
              let value = Int64(digits) else { return nil }
        return (0..<(9 - digits.count)).reduce(value) { number, _ in number * 10 }
    }

    static func trimmedOfSpaces(_ text: String) -> String {
        String(text.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }

    /// "52%" for 0.52; clamped to 0…100.
    static func percent(_ fraction: Double) -> String {
        "\(Int((min(max(fraction, 0), 1) * 100).rounded(.down)))%"
    }

    /// "1 file", "3 files".
    static func count(_ n: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(n) " + (n == 1 ? singular : plural ?? singular + "s")
    }
}

/// The symbol and colour of each file state (DESIGN §2) in human output.
enum StateSymbol {
    static func symbol(_ state: String) -> String {
        switch state {
        case "downloaded": "✓"
        case "uploading": "↑"
        case "downloading": "↓"
        case "notDownloaded": "☁"
        case "conflict": "!"
        case "error": "✗"
        case "local": "•"
        case "outdated": "⟳"
        default: "?"
        }
    }

    static func paint(_ state: String) -> Paint? {
        switch state {
        case "downloaded": .green
        case "uploading", "downloading": .blue
        case "notDownloaded": .cyan
        case "conflict", "outdated": .yellow
        case "error": .red
        default: nil
        }
    }

    /// Words for people (`info`, `watch`): "in sync" says more than "downloaded" after an
    /// upload.
    static func words(_ state: String) -> String {
        switch state {
        case "notDownloaded": "not downloaded"
        case "downloaded": "in sync"
        default: state
        }
    }

    /// "• local  ↑ uploading  …" for the help page, with the protocol's names, which
    /// `ls --state` takes.
    static var legend: String {
        Catalogue.stateNames.map { "\(symbol($0)) \($0)" }.joined(separator: "  ")
    }
}
