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
            let fitted = Self.fitted(stem: stem, label: Array(suffix.utf8), ext: ext)
            guard let candidate = try? path.parent.appending(name: fitted) else { continue }
            if !taken(candidate) { return candidate }
        }
        fatalError("unreachable")
    }

    /// The longest name Linux filesystems take (NAME_MAX), in bytes.
    static let nameMax = 255

    /// `stem + label + ext`, shortened to `nameMax` bytes if it grew past it: the stem first,
    /// down to its first character; when even that leaves no room (an extension of some 220
    /// bytes, `a.` and 250 more), the whole name is shortened before the label, extension
    /// included. A name longer than NAME_MAX cannot be created, and a conflict whose copy
    /// cannot be made is planned again at once, for ever. A cut never splits a UTF-8 character.
    static func fitted(stem: [UInt8], label: [UInt8], ext: [UInt8]) -> [UInt8] {
        let keptStem = prefix(stem, fitting: nameMax - label.count - ext.count)
        if !keptStem.isEmpty { return keptStem + label + ext }
        return prefix(stem + ext, fitting: nameMax - label.count) + label
    }

    /// `bytes` if they fit in `limit`, else their longest prefix within it that does not end
    /// inside a UTF-8 sequence (the first byte dropped is not a continuation byte).
    static func prefix(_ bytes: [UInt8], fitting limit: Int) -> [UInt8] {
        guard bytes.count > limit else { return bytes }
        var end = max(0, limit)
        while end > 0, bytes[end] & 0xC0 == 0x80 { end -= 1 }
        return Array(bytes[..<end])
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
