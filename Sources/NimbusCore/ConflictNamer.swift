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
        let local = CivilTime(wallTime + .seconds(Int64(utcOffsetSeconds)))
        return local.dateText + " " + local.clockText(separator: "")
    }
}
