import NimbusCore
import NimbusSystem
import NimbusVocabulary

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
        /// When it was displaced, from the stamp in its name (nil: a name without one).
        public var displacedAt: WallInstant?

        /// The version kept at `location`, whose name ends with `VersionStore.suffix`.
        init(location: RelativePath, metadata: FileMetadata) {
            self.location = location
            self.id = String(displayString(location.name).dropLast(VersionStore.suffix.count))
            self.metadata = metadata
            self.displacedAt = VersionStore.displacedTime(of: location.name)
        }
    }

    let device: String

    /// A fresh place for the version of `path` displaced at `wallTime`: the stamp's fraction
    /// has nine digits, so that names sort by time. (Names written before 2026-11-26 have the
    /// nanoseconds unpadded, `.5` for 5 ns; `displacedTime` reads both the same way.)
    func location(for path: RelativePath, at wallTime: WallInstant, attempt: Int = 1) -> RelativePath {
        let namer = ConflictNamer(device: device, wallTime: wallTime)
        let nanoseconds = String(wallTime.nanosecondsIntoSecond)
        let stamp = namer.timestamp.replacingSpaces() + "." + String(repeating: "0", count: 9 - nanoseconds.count) + nanoseconds
        let counter = attempt > 1 ? "-\(attempt)" : ""
        let name = Array("\(stamp)-\(namer.deviceInNames)\(counter)\(Self.suffix)".utf8)
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
            return Version(location: entry.path, metadata: entry.metadata)
        }.sorted(by: Version.newerFirst)
    }

    /// Every kept version of every file, with the file's path (relative to the roots).
    func all<FS: FileSystem>(in cloud: FS, under folder: RelativePath = .root) throws -> [(file: RelativePath, version: Version)] {
        let top = RootMarkers.versions.appending(folder)
        guard try cloud.metadata(of: top)?.kind == .directory else { return [] }
        let scan = try cloud.scan(top) { _ in true }
        return scan.entries.compactMap { entry in
            let name = displayString(entry.path.name)
            guard name.hasSuffix(Self.suffix), entry.metadata.kind != .directory,
                  let file = RootMarkers.versions.relative(entry.path.parent), !file.isRoot else { return nil }
            return (file, Version(location: entry.path, metadata: entry.metadata))
        }.sorted { $0.file != $1.file ? $0.file < $1.file : Version.newerFirst($0.version, $1.version) }
    }

    /// What a prune did and what is left.
    struct PruneOutcome: Sendable, Equatable {
        var removed = 0
        var removedBytes: Int64 = 0
        var count = 0
        var bytes: Int64 = 0
    }

    /// Deletes the versions `policy` gives up (its staggered schedule, then its size limit),
    /// and the folders that leaves empty. Age is judged by the UTC stamp in the version's
    /// name (when it was displaced), not by its mtime, which is the original file's.
    func prune<FS: FileSystem>(in cloud: FS, now: WallInstant, policy: VersionRetention) throws -> PruneOutcome {
        let kept = try all(in: cloud)
        var byKey: [String: RelativePath] = [:]
        let candidates = kept.map { item -> VersionRetention.Candidate in
            let key = item.version.location.description
            byKey[key] = item.version.location
            // A name without a readable stamp counts as displaced now: kept, never lost by mistake.
            return VersionRetention.Candidate(file: item.file.description, id: key,
                                              displacedAt: item.version.displacedAt ?? now,
                                              size: item.version.metadata.size)
        }
        var outcome = PruneOutcome(count: kept.count, bytes: kept.reduce(0) { $0 + $1.version.metadata.size })
        var emptied = Set<RelativePath>()
        for version in policy.expired(candidates, now: now) {
            guard let location = byKey[version.id] else { continue }
            try cloud.removeFile(location)
            emptied.insert(location.parent)
            outcome.removed += 1
            outcome.removedBytes += version.size
        }
        outcome.count -= outcome.removed
        outcome.bytes -= outcome.removedBytes
        // The deepest first, so that a folder emptied by its children's removal goes too.
        for folder in emptied.sorted(by: { $0.depth > $1.depth }) {
            var current = folder
            while current != RootMarkers.versions, RootMarkers.versions.contains(current) {
                guard (try? cloud.scan(current) { _ in false })?.entries.isEmpty == true else { break }
                try? cloud.removeDirectory(current)
                current = current.parent
            }
        }
        return outcome
    }

    /// Parses the `YYYY-MM-DD_HHMMSS.nnnnnnnnn` stamp at the start of a version's name. The
    /// fraction is a count of nanoseconds, nine digits or (in older names) fewer, unpadded.
    static func displacedTime(of name: [UInt8]) -> WallInstant? {
        let text = displayString(name)
        guard text.hasSuffix(suffix), text.count > 17 else { return nil }
        let digits = Array(text.prefix(17).filter(\.isNumber))
        guard digits.count == 14 else { return nil }
        // YYYY MM DD HH MM SS
        let fields = [0..<4, 4..<6, 6..<8, 8..<10, 10..<12, 12..<14].compactMap { Int64(String(digits[$0])) }
        guard fields.count == 6 else { return nil }
        var fraction = text.dropFirst(17)
        let nanoseconds = fraction.popFirst() == "." ? Int64(String(fraction.prefix { $0.isASCII && $0.isNumber }.prefix(9))) ?? 0 : 0
        return CivilTime(year: fields[0], month: fields[1], day: fields[2], hour: fields[3], minute: fields[4],
                         second: fields[5], nanosecond: nanoseconds).instant
    }
}

extension VersionStore.Version {
    /// The order of `nimbusctl versions`: by the time in the name, not by the name, whose
    /// fraction of a second was not padded before 2026-11-26; a name without a stamp first.
    static func newerFirst(_ a: Self, _ b: Self) -> Bool {
        let (timeA, timeB) = (a.displacedAt ?? .distantFuture, b.displacedAt ?? .distantFuture)
        return timeA != timeB ? timeA > timeB : a.id > b.id
    }
}

extension String {
    func replacingSpaces() -> String { String(map { $0 == " " ? "_" : $0 }) }
}
