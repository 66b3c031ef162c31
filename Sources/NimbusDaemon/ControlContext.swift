import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// The pair as the control server sees it (PROTOCOL.md): what it may read from any thread,
/// and what it may ask of the engine thread. `PairRuntime` is the real one; tests give the
/// server a fake and need no engine, folders or process.
public protocol ControlContext: AnyObject, Sendable {
    // MARK: Asking the engine thread (safe from any thread)

    /// Runs `work` on the engine thread, between sync passes.
    func perform(_ work: @escaping @Sendable () -> Void)
    func setPaused(_ paused: Bool)
    /// Downloads `path`; requests for the same path share one download.
    func download(_ path: RelativePath, _ request: DownloadRequest, completion: @escaping DownloadCompletion)
    /// Syncs `paths` soon (an application released its lease on them).
    func syncSoon(_ paths: [RelativePath])

    // MARK: Published state (any thread)

    var isPaused: Bool { get }
    var status: EngineStatus { get }
    var conflictCount: Int { get }
    var errorCount: Int { get }
    var deviceName: String { get }
    /// The per-path lock table that applications' leases share with the engine.
    var locks: PathLocks { get }
    /// Receives the engine's events (for `watch`); nil stops them.
    func onEvent(_ handler: (@Sendable (EngineEvent) -> Void)?)
    func entry(_ path: RelativePath) -> EntryInfo?
    func listEntries(under directory: RelativePath, recursive: Bool) throws -> [EntryInfo]
    func conflicts() -> [Conflict]
    /// The synced path that `path` (perhaps a placeholder's name) stands for.
    func residentPath(_ path: RelativePath) throws -> RelativePath
    func isPlaceholder(_ path: RelativePath) -> Bool
    /// What is at `path` in the local folder now, without following a symlink.
    func localMetadata(of path: RelativePath) throws -> FileMetadata?
    func versions(of path: RelativePath) throws -> [VersionStore.Version]
    func allVersions(under folder: RelativePath) throws -> [(file: RelativePath, version: VersionStore.Version)]
    func restorePlan(_ path: RelativePath, versionID: String?, at time: WallInstant?, to target: RelativePath?) throws -> [RestorePlanItem]

    // MARK: On the engine thread only (inside `perform`)

    func sync(_ paths: Set<RelativePath>?)
    func resolve(_ path: RelativePath, keep choice: ConflictChoice) throws
    func restore(_ items: [RestorePlanItem]) throws
    func pruneVersions() -> (removed: Int, removedBytes: Int64)?
    func confirmDeletes() -> Int
    func revertDeletes() -> Int
    func evict(_ path: RelativePath) throws -> EntryInfo?
    func pin(_ path: RelativePath) throws -> EntryInfo?
    func unpin(_ path: RelativePath) throws -> EntryInfo?
}

/// The runtime serves the control server by handing each question to its engine.
extension PairRuntime: ControlContext {
    public var isPaused: Bool { engine.isPaused }
    public var status: EngineStatus { engine.status }
    public var conflictCount: Int { engine.conflictCount }
    public var errorCount: Int { engine.errorCount }
    public var deviceName: String { engine.settings.deviceName }
    public var locks: PathLocks { engine.locks }
    public func onEvent(_ handler: (@Sendable (EngineEvent) -> Void)?) { engine.onEvent(handler) }
    public func entry(_ path: RelativePath) -> EntryInfo? { engine.entry(path) }
    public func listEntries(under directory: RelativePath, recursive: Bool) throws -> [EntryInfo] {
        try engine.listEntries(under: directory, recursive: recursive)
    }
    public func conflicts() -> [Conflict] { engine.conflicts() }
    public func residentPath(_ path: RelativePath) throws -> RelativePath { try engine.residentPath(path) }
    public func isPlaceholder(_ path: RelativePath) -> Bool { engine.isPlaceholder(path) }
    public func localMetadata(of path: RelativePath) throws -> FileMetadata? { try engine.local.metadata(of: path) }
    public func versions(of path: RelativePath) throws -> [VersionStore.Version] { try engine.versions(of: path) }
    public func allVersions(under folder: RelativePath) throws -> [(file: RelativePath, version: VersionStore.Version)] {
        try engine.allVersions(under: folder)
    }
    public func restorePlan(_ path: RelativePath, versionID: String?, at time: WallInstant?, to target: RelativePath?) throws -> [RestorePlanItem] {
        try engine.restorePlan(path, versionID: versionID, at: time, to: target)
    }
    public func sync(_ paths: Set<RelativePath>?) { engine.sync(paths) }
    public func resolve(_ path: RelativePath, keep choice: ConflictChoice) throws { try engine.resolve(path, keep: choice) }
    public func restore(_ items: [RestorePlanItem]) throws { try engine.restore(items) }
    public func pruneVersions() -> (removed: Int, removedBytes: Int64)? { engine.pruneVersions() }
    public func confirmDeletes() -> Int { engine.confirmDeletes() }
    public func revertDeletes() -> Int { engine.revertDeletes() }
    public func evict(_ path: RelativePath) throws -> EntryInfo? { try engine.evict(path) }
    public func pin(_ path: RelativePath) throws -> EntryInfo? { try engine.pin(path) }
    public func unpin(_ path: RelativePath) throws -> EntryInfo? { try engine.unpin(path) }
}
