import NimbusCore
import NimbusSystem

/// Previous versions of cloud files (DESIGN §4): before a cloud file is replaced or deleted it
/// is renamed (same filesystem, no copy) to `.nimbus/versions/<path>/<time>-<device>.nimbus-version`.
public struct VersionStore: Sendable {
    public static let suffix = ".nimbus-version"

    public struct Version: Hashable, Sendable {
        /// Where the version is kept, relative to the cloud root.
        public var location: RelativePath
        /// An identifier for `restore --version`: the file name without the suffix.
        public var id: String
        public var metadata: FileMetadata
    }

    let device: String

    /// A fresh place for the version of `path` displaced at `wallTime`.
    func location(for path: RelativePath, at wallTime: Int64, attempt: Int = 1) -> RelativePath {
        let namer = ConflictNamer(device: device, wallTime: wallTime)
        let stamp = namer.timestamp.replacingSpaces() + "." + String(wallTime % 1_000_000_000)
        let counter = attempt > 1 ? "-\(attempt)" : ""
        let name = Array("\(stamp)-\(namer.safeDevice)\(counter)\(Self.suffix)".utf8)
        return try! RootMarkers.versions.appending(path).appending(name: name)
    }

    /// The versions kept for `path`, newest first.
    func versions<FS: FileSystem>(of path: RelativePath, in cloud: FS) throws -> [Version] {
        let folder = RootMarkers.versions.appending(path)
        guard try cloud.metadata(of: folder)?.kind == .directory else { return [] }
        let scan = try cloud.scan(folder) { _ in false }
        return scan.entries.compactMap { entry in
            let name = displayString(entry.path.name)
            guard entry.path.parent == folder, name.hasSuffix(Self.suffix), entry.metadata.kind != .directory else { return nil }
            return Version(location: entry.path, id: String(name.dropLast(Self.suffix.count)), metadata: entry.metadata)
        }.sorted { $0.id > $1.id }
    }

    /// Removes versions older than `retention`; returns how many. Age is judged by the UTC
    /// stamp in the version's name (when it was displaced), not by its mtime, which is the
    /// original file's.
    func prune<FS: FileSystem>(in cloud: FS, now: Int64, retention: Int64) throws -> Int {
        guard try cloud.metadata(of: RootMarkers.versions) != nil else { return 0 }
        var removed = 0
        let scan = try cloud.scan(RootMarkers.versions) { _ in true }
        for entry in scan.entries where entry.metadata.kind != .directory {
            guard let displaced = Self.displacedTime(of: entry.path.name), now - displaced > retention else { continue }
            try cloud.removeFile(entry.path)
            removed += 1
        }
        return removed
    }

    /// Parses the `YYYY-MM-DD_HHMMSS.nnn` stamp at the start of a version's name.
    static func displacedTime(of name: [UInt8]) -> Int64? {
        let text = displayString(name)
        guard text.hasSuffix(suffix), text.count > 17 else { return nil }
        let digits = text.prefix(17).filter(\.isNumber)
        guard digits.count == 14, let value = Int64(digits) else { return nil }
        let (year, rest1) = value.quotientAndRemainder(dividingBy: 10_000_000_000)
        let (month, rest2) = rest1.quotientAndRemainder(dividingBy: 100_000_000)
        let (day, rest3) = rest2.quotientAndRemainder(dividingBy: 1_000_000)
        let (hour, rest4) = rest3.quotientAndRemainder(dividingBy: 10_000)
        let (minute, second) = rest4.quotientAndRemainder(dividingBy: 100)
        let days = daysSinceEpoch(year: year, month: month, day: day)
        return ((days * 24 + hour) * 60 + minute) * 60_000_000_000 + second * 1_000_000_000
    }
}

extension String {
    func replacingSpaces() -> String { String(map { $0 == " " ? "_" : $0 }) }
}
