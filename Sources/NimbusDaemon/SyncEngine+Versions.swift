import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// One file a restore brings back (or would, in a dry run).
public struct RestorePlanItem: Sendable, Equatable {
    public var file: RelativePath
    public var version: VersionStore.Version
    public var destination: RelativePath
}

extension SyncEngine {
    /// Applies the retention schedule and size limit to the versions store, and counts
    /// what is left for `status`. Returns what it did; nil when the store could not be read.
    @discardableResult
    public func pruneVersions() -> (removed: Int, removedBytes: Int64)? {
        checkOwner()
        let s = settings
        let policy = VersionRetention(retention: s.versionRetention, maxBytes: s.versionsMaxSize)
        do {
            let outcome = try VersionStore(device: s.deviceName).prune(in: cloud, now: clock.wallNow, policy: policy)
            state.withLock {
                $0.status.versionsCount = outcome.count
                $0.status.versionsBytes = outcome.bytes
            }
            if outcome.removed > 0 {
                log.info("removed \(outcome.removed) old version(s) (\(outcome.removedBytes) bytes) by the retention schedule; \(outcome.count) kept")
            }
            return (outcome.removed, outcome.removedBytes)
        } catch {
            log.warning("could not prune old versions: \(error)")
            return nil
        }
    }

    /// A version of `size` bytes was just added to the store.
    func noteVersionKept(size: Int64) {
        state.withLock {
            $0.status.versionsCount += 1
            $0.status.versionsBytes += size
        }
    }

    public func versions(of path: RelativePath) throws -> [VersionStore.Version] {
        try VersionStore(device: settings.deviceName).versions(of: path, in: cloud)
    }

    /// Every version kept of every file at or below `folder`, by file, newest first.
    public func allVersions(under folder: RelativePath) throws -> [(file: RelativePath, version: VersionStore.Version)] {
        try VersionStore(device: settings.deviceName).all(in: cloud, under: folder)
    }

    /// The version of a file that held its content at `time`: the first one displaced after
    /// it (it was there until then). Without a time, the newest. Nil when the file's
    /// content at that time is not among its versions (it is what is there now, or the file
    /// did not exist then).
    static func version(_ versions: [VersionStore.Version], at time: WallInstant?) -> VersionStore.Version? {
        let dated = versions.map { ($0, $0.displacedAt ?? .distantFuture) }
        guard let time else { return dated.max { ($0.1, $0.0.id) < ($1.1, $1.0.id) }?.0 }
        return dated.filter { $0.1 > time }.min { ($0.1, $0.0.id) < ($1.1, $1.0.id) }?.0
    }

    /// What restoring `path` (a file, or a folder whose files are among the versions) as of
    /// `time` brings back, to `target` (default `path`). A file already holding that content
    /// is left out.
    public func restorePlan(_ path: RelativePath, versionID: String?, at time: WallInstant?,
                            to target: RelativePath?) throws -> [RestorePlanItem] {
        let own = try versions(of: path)
        let destination = target ?? path
        if !own.isEmpty || versionID != nil {
            let chosen = versionID.map { id in own.first { $0.id == id } } ?? Self.version(own, at: time)
            guard let version = chosen else {
                throw EngineRequestError(kind: .notFound, message: versionID.map { "\(path) has no version \($0)" }
                    ?? (own.isEmpty ? "\(path) has no kept versions" : "\(path) had no other content at that time than what it has now"))
            }
            if let existing = try cloud.metadata(of: destination), existing.kind == .directory {
                throw EngineRequestError(kind: .invalidArgument, message: "\(destination) is a folder; restore to another path with --to")
            }
            return [RestorePlanItem(file: path, version: version, destination: destination)]
        }
        let byFile = Dictionary(grouping: try allVersions(under: path).filter { $0.file != path }, by: \.file)
        guard !byFile.isEmpty else {
            throw EngineRequestError(kind: .notFound, message: "\(path) has no kept versions, and no file in it has")
        }
        var items: [RestorePlanItem] = []
        for file in byFile.keys.sorted() {
            guard let version = Self.version(byFile[file]!.map(\.version), at: time),
                  let destination = file.rebased(from: path, to: target ?? path) else { continue }
            let existing = try cloud.metadata(of: destination)
            if let existing, existing.kind == .directory || existing.looksLike(version.metadata) { continue }
            items.append(RestorePlanItem(file: file, version: version, destination: destination))
        }
        return items
    }

    /// Restores one version of a file (default the newest) at `target` (default `path`).
    public func restore(_ path: RelativePath, versionID: String?, to target: RelativePath?) throws -> RelativePath {
        let items = try restorePlan(path, versionID: versionID, at: nil, to: target)
        try restore(items)
        return target ?? path
    }

    /// Brings the planned versions back into the cloud folder, from where they sync down like
    /// any change. What each replaces is itself kept as a version. Runs on the engine thread.
    public func restore(_ items: [RestorePlanItem]) throws {
        checkOwner()
        // What each restored file replaces goes to the versions store: a rename in the cloud
        // folder, flushed before the commit of the pass that syncs the file down.
        try changingNames(on: [.cloud]) { try restoreEach(items) }
        if !items.isEmpty { sync(Set(items.map(\.destination))) }
    }

    private func restoreEach(_ items: [RestorePlanItem]) throws {
        for item in items {
            if let existing = try cloud.metadata(of: item.destination) {
                guard existing.kind != .directory else {
                    throw EngineRequestError(kind: .invalidArgument, message: "\(item.destination) is a folder; restore to another path with --to")
                }
                try removeKeepingVersion(item.destination, on: .cloud)
            }
            try makeDirectories(item.destination.parent, in: cloud)
            // Copy rather than move, so the version stays available.
            let prepared = try cloud.prepareCopy(of: item.version.location, from: cloud, expected: item.version.metadata,
                                                 durable: true) { _ in }
            do {
                _ = try cloud.install(prepared, at: item.destination, replacing: nil, displacedTo: nil, durable: true)
            } catch {
                cloud.discard(prepared)
                throw error
            }
        }
    }
}
