import NimbusVocabulary

/// Names the copy that keeps the losing side of a conflict:
/// `report (conflict from laptop 2026-11-21 133501).pdf`, then ` 2`, ` 3`… when taken.
public struct ConflictNamer: Sendable {
    public var device: String
    /// When the conflict was found, and the local UTC offset.
    public var wallTime: WallInstant
    public var utcOffsetSeconds: Int
    /// Names taken beyond what the caller of `name(for:taken:)` sees: a pass sees only its
    /// scope, and a conflict copy made a moment earlier in the same second (two devices
    /// editing one file) is outside it, so the same name was chosen, its creation failed
    /// ("File exists") and the conflict waited for a retry in another second.
    public var isTakenElsewhere: @Sendable (RelativePath) -> Bool

    public init(device: String, wallTime: WallInstant, utcOffsetSeconds: Int = 0,
                isTakenElsewhere: @escaping @Sendable (RelativePath) -> Bool = { _ in false }) {
        self.device = device
        self.wallTime = wallTime
        self.utcOffsetSeconds = utcOffsetSeconds
        self.isTakenElsewhere = isTakenElsewhere
    }

    public func name(for path: RelativePath, taken: (RelativePath) -> Bool) -> RelativePath {
        let label = " (conflict from \(deviceInNames) \(timestamp))"
        for attempt in 1... {
            let suffix = attempt == 1 ? label : String(label.dropLast()) + " \(attempt))"
            let fitted = FileName.inserting(Array(suffix.utf8), into: path.name)
            guard let candidate = try? path.parent.appending(name: fitted) else { continue }
            if !taken(candidate) && !isTakenElsewhere(candidate) { return candidate }
        }
        fatalError("unreachable")
    }

    /// The most of a device's name that goes into a name Nimbus makes, in bytes. The config
    /// takes 64 characters, and a character may be many bytes (four for an emoji, more with
    /// combining marks): in full, such a device name alone would not fit in NAME_MAX. Half of
    /// it leaves some 90 bytes of the file's own name beside the rest of the label.
    static let deviceMaxBytes = FileName.maxBytes / 2

    /// `safeDevice`, shortened to `deviceMaxBytes` without splitting a character.
    public var deviceInNames: String {
        String(decoding: FileName.prefix(safeDevice.utf8, fitting: Self.deviceMaxBytes), as: UTF8.self)
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
