import NimbusVocabulary

/// Names the copy that keeps the losing side of a conflict:
/// `report (conflict from laptop 2026-11-21 133501).pdf`, then ` 2`, ` 3`… when taken.
public struct ConflictNamer: Sendable {
    public var device: String
    /// When the conflict was found, and the local UTC offset.
    public var wallTime: WallInstant
    public var utcOffsetSeconds: Int

    public init(device: String, wallTime: WallInstant, utcOffsetSeconds: Int = 0) {
        self.device = device
        self.wallTime = wallTime
        self.utcOffsetSeconds = utcOffsetSeconds
    }

    public func name(for path: RelativePath, taken: (RelativePath) -> Bool) -> RelativePath {
        let name = path.name
        // The extension is the part after the last dot, unless the dot starts the name.
        let dot = name.lastIndex(of: UInt8(ascii: ".")).flatMap { $0 > 0 ? $0 : nil }
        let stem = Array(name[..<(dot ?? name.endIndex)])
        let ext = dot.map { Array(name[$0...]) } ?? []
        let label = " (conflict from \(safeDevice) \(timestamp))"
        for attempt in 1... {
            let suffix = attempt == 1 ? label : String(label.dropLast()) + " \(attempt))"
            let candidateName = stem + Array(suffix.utf8) + ext
            // A name that grew past NAME_MAX is shortened from the stem.
            let trimmed = candidateName.count > 255
                ? Array(stem.prefix(max(1, stem.count - (candidateName.count - 255)))) + Array(suffix.utf8) + ext
                : candidateName
            guard let candidate = try? path.parent.appending(name: trimmed) else { continue }
            if !taken(candidate) { return candidate }
        }
        fatalError("unreachable")
    }

    /// A device name cannot smuggle a slash into a file name.
    public var safeDevice: String {
        let cleaned = String(device.map { $0 == "/" || $0 == "\0" ? "-" : $0 })
        return cleaned.isEmpty ? "unknown device" : cleaned
    }

    /// `YYYY-MM-DD HHMMSS` in local time.
    public var timestamp: String {
        let seconds = wallTime.secondsSinceEpoch + Int64(utcOffsetSeconds)
        let (days, secondOfDay) = seconds.quotientAndRemainder(dividingBy: 86_400)
        let (y, m, d) = civilDate(daysSinceEpoch: secondOfDay < 0 ? days - 1 : days)
        let s = secondOfDay < 0 ? secondOfDay + 86_400 : secondOfDay
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(y)-\(two(m))-\(two(d)) \(two(s / 3600))\(two(s % 3600 / 60))\(two(s % 60))"
    }
}

/// Proleptic Gregorian calendar date of a day count since 1970-01-01 (era-based arithmetic).
func civilDate(daysSinceEpoch: Int64) -> (year: Int64, month: Int64, day: Int64) {
    let z = daysSinceEpoch + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let dayOfEra = z - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let mp = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of `civilDate`).
public func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yearOfEra = y - era * 400
    let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146_097 + dayOfEra - 719_468
}
