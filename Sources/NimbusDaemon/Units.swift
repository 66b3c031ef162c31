import NimbusCore
import NimbusVocabulary
/// Sizes and durations as people write them in the config file and on the command line.
///
/// Sizes follow coreutils: `K`, `M`, `G`, `T`, `P` and `KiB`…`PiB` are powers of 1024;
/// `KB`, `MB`, `GB`, `TB`, `PB` are powers of 1000; a bare number is bytes. Letters are
/// case-insensitive (`10g` = `10G`) and a decimal fraction is allowed (`1.5GiB`).
///
/// Durations follow systemd's spelling: `ns`, `us`, `ms`, `s`, `m`/`min`, `h`, `d`, `w`, `y`
/// (365 days), combinable (`1h30m`, `1h 30m`), with fractions (`1.5h`); a bare number is
/// seconds. Units are lowercase only, so that `6M` (months? minutes?) is refused rather than
/// guessed.
public enum Units {
    public static let sizeExpectation = "a size such as 10G or 512M"
    public static let durationExpectation = "a duration such as 30d, 12h, 90s or 500ms"

    /// Bytes, or nil if the text is not a size or does not fit in an Int64.
    public static func parseSize(_ text: String) -> Int64? {
        var scanner = Scanner(text)
        guard let number = scanner.number() else { return nil }
        scanner.skipSpaces()
        let unit = scanner.rest.lowercased()
        guard let multiplier = sizeMultipliers[unit] else { return nil }
        return number.scaled(by: multiplier)
    }

    /// The duration, or nil if the text is not one or is longer than Int64 nanoseconds hold
    /// (292 years). The sum is taken in whole nanoseconds, so that `1.5h` is exact.
    public static func parseDuration(_ text: String) -> Duration? {
        var scanner = Scanner(text)
        var total: Int64 = 0
        var components = 0
        while !scanner.isAtEnd {
            guard let number = scanner.number() else { return nil }
            scanner.skipSpaces()
            let unit = scanner.letters()
            // A bare number means seconds, but only on its own: `1h30` is a typo, not 1h30s.
            guard let multiplier = unit.isEmpty ? (components == 0 && scanner.isAtEnd ? secondNanoseconds : nil)
                                                : durationMultipliers[unit],
                  let value = number.scaled(by: multiplier) else { return nil }
            let (sum, overflow) = total.addingReportingOverflow(value)
            guard !overflow else { return nil }
            total = sum
            components += 1
            scanner.skipSpaces()
        }
        return components == 0 ? nil : .nanoseconds(total)
    }

    /// The largest binary unit that divides the size exactly: 1073741824 → `1G`,
    /// 2048 → `2K`, 1000 → `1000` (bytes).
    public static func formatSize(_ bytes: Int64) -> String {
        for (suffix, multiplier) in [("P", Int64(1) << 50), ("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)]
        where bytes != 0 && bytes % multiplier == 0 {
            return "\(bytes / multiplier)\(suffix)"
        }
        return "\(bytes)"
    }

    /// The largest unit that divides the duration exactly: `30d`, `1h`, `90s`, `500ms`.
    public static func formatDuration(_ interval: Duration) -> String {
        let nanoseconds = interval.nanosecondCount
        if nanoseconds == 0 { return "0s" }
        for (suffix, unit) in [("d", Duration.days(1)), ("h", .hours(1)), ("m", .minutes(1)), ("s", .seconds(1)),
                               ("ms", .milliseconds(1)), ("us", .microseconds(1))]
        where nanoseconds % unit.nanosecondCount == 0 {
            return "\(nanoseconds / unit.nanosecondCount)\(suffix)"
        }
        return "\(nanoseconds)ns"
    }

    static let sizeMultipliers: [String: Int64] = {
        var table: [String: Int64] = ["": 1, "b": 1]
        for (power, letter) in ["k", "m", "g", "t", "p"].enumerated() {
            var binary: Int64 = 1, decimal: Int64 = 1
            for _ in 0...power { binary *= 1024; decimal *= 1000 }
            table[letter] = binary
            table[letter + "ib"] = binary
            table[letter + "b"] = decimal
        }
        return table
    }()

    /// What a bare number counts.
    static let secondNanoseconds = Duration.seconds(1).nanosecondCount

    /// Each unit's name and its length in nanoseconds, the unit the grammar sums in.
    static let durationMultipliers: [String: Int64] = {
        var table: [String: Int64] = [:]
        let units: [([String], Duration)] = [
            (["ns", "nsec"], .nanoseconds(1)),
            (["us", "usec"], .microseconds(1)),
            (["ms", "msec"], .milliseconds(1)),
            (["s", "sec", "secs", "second", "seconds"], .seconds(1)),
            (["m", "min", "mins", "minute", "minutes"], .minutes(1)),
            (["h", "hr", "hrs", "hour", "hours"], .hours(1)),
            (["d", "day", "days"], .days(1)),
            (["w", "week", "weeks"], .days(7)),
            (["y", "year", "years"], .days(365)),
        ]
        for (names, length) in units { for name in names { table[name] = length.nanosecondCount } }
        return table
    }()
}

/// A decimal number split into its whole part and fraction (`1.5` = 1 + 5/10), so that
/// scaling by a unit stays exact integer arithmetic.
struct DecimalNumber {
    var whole: Int64
    var fraction: Int64
    var fractionScale: Int64

    /// `whole × multiplier + fraction × multiplier / fractionScale`, truncated; nil on overflow.
    func scaled(by multiplier: Int64) -> Int64? {
        let (wholePart, overflow) = whole.multipliedReportingOverflow(by: multiplier)
        guard !overflow else { return nil }
        // fraction < fractionScale, so the quotient is below `multiplier` and fits.
        let product = fraction.multipliedFullWidth(by: multiplier)
        let fractionPart = fractionScale.dividingFullWidth(product).quotient
        let (sum, sumOverflow) = wholePart.addingReportingOverflow(fractionPart)
        return sumOverflow ? nil : sum
    }
}

/// A tiny ASCII scanner for the unit grammar; any non-ASCII byte simply fails to match.
private struct Scanner {
    let bytes: [UInt8]
    var index = 0

    init(_ text: String) {
        bytes = Array(text.utf8)
        skipSpaces()
    }

    var isAtEnd: Bool { index == bytes.count }
    var rest: String { String(decoding: bytes[index...], as: UTF8.self) }

    mutating func skipSpaces() {
        while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") { index += 1 }
    }

    mutating func letters() -> String {
        let start = index
        while index < bytes.count, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(bytes[index]) { index += 1 }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// `digits` or `digits.digits`. Fraction digits beyond the 18th are dropped: they cannot
    /// change an Int64 result by more than the truncation that happens anyway.
    mutating func number() -> DecimalNumber? {
        var result = DecimalNumber(whole: 0, fraction: 0, fractionScale: 1)
        var wholeDigits = 0
        while index < bytes.count, let digit = digitValue(bytes[index]) {
            let (shifted, o1) = result.whole.multipliedReportingOverflow(by: 10)
            let (sum, o2) = shifted.addingReportingOverflow(digit)
            guard !o1, !o2 else { return nil }
            result.whole = sum
            wholeDigits += 1
            index += 1
        }
        guard wholeDigits > 0 else { return nil }
        guard index < bytes.count, bytes[index] == UInt8(ascii: ".") else { return result }
        index += 1
        var fractionDigits = 0
        while index < bytes.count, let digit = digitValue(bytes[index]) {
            if fractionDigits < 18 {
                result.fraction = result.fraction * 10 + digit
                result.fractionScale *= 10
            }
            fractionDigits += 1
            index += 1
        }
        return fractionDigits > 0 ? result : nil
    }

    private func digitValue(_ byte: UInt8) -> Int64? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? Int64(byte - UInt8(ascii: "0")) : nil
    }
}

// MARK: - Text helpers shared by the config-file and flag parsers

/// "Did you mean …?" for misspelt keys, sections, flags and values.
enum Spelling {
    /// The candidate closest to `input` by edit distance (a transposition counts as one
    /// edit), if it is close enough to be a plausible typo; ties go to the earlier candidate.
    static func closest(to input: String, among candidates: [String]) -> String? {
        let lowered = input.lowercased()
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(Array(lowered), Array(candidate.lowercased()))
            let allowed = max(1, min(3, candidate.count / 3))
            if distance <= allowed, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        if let best { return best.candidate }
        // A prefix of at least three letters: `--loc` → `--local`.
        let prefixed = candidates.filter { lowered.count >= 3 && $0.lowercased().hasPrefix(lowered) }
        return prefixed.count == 1 ? prefixed[0] : nil
    }
}

extension String {
    func zeroPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (Foundation-free).
    var trimmedOfBlanks: String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isBlank($0) }), let end = lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(self[start...end])
    }
}
