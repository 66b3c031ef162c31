import NimbusCore
import NimbusSystem
import NimbusVocabulary

// The pair as the control server sees it (PROTOCOL.md), in three parts by what the handlers
// need: what it shows (`PairView`), what changes it (`PairCommands`) and files on demand
// (`PairResidency`). Each handler reaches only the part it uses (`ControlHandler.view`,
// `.commands`, `.residency`); `PairRuntime` is the real pair, tests serve a fake and need
// no engine, folders or process.

/// What the pair shows: its published state, read from any thread.
public protocol PairView: AnyObject, Sendable {
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
    /// What is at `path` in the local folder now, without following a symlink.
    func localMetadata(of path: RelativePath) throws -> FileMetadata?
    func versions(of path: RelativePath) throws -> [VersionStore.Version]
    func allVersions(under folder: RelativePath) throws -> [(file: RelativePath, version: VersionStore.Version)]
    func restorePlan(_ path: RelativePath, versionID: String?, at time: WallInstant?, to target: RelativePath?) throws -> [RestorePlanItem]
}

/// What changes the pair. The first three are safe from any thread; the others run on the
/// engine thread only, inside `perform`.
public protocol PairCommands: AnyObject, Sendable {
    /// Runs `work` on the engine thread, between sync passes.
    func perform(_ work: @escaping @Sendable () -> Void)
    func setPaused(_ paused: Bool)
    /// Syncs `paths` soon (an application released its lease on them).
    func syncSoon(_ paths: [RelativePath])

    func sync(_ paths: Set<RelativePath>?)
    func resolve(_ path: RelativePath, keep choice: ConflictChoice) throws
    func restore(_ items: [RestorePlanItem]) throws
    func pruneVersions() -> (removed: Int, removedBytes: Int64)?
    func confirmDeletes() -> Int
    func revertDeletes() -> Int
}

/// Files on demand (DESIGN §5). The first three are safe from any thread; evict, pin and
/// unpin run on the engine thread only, inside `PairCommands.perform`.
public protocol PairResidency: AnyObject, Sendable {
    /// Downloads `path`; requests for the same path share one download.
    func download(_ path: RelativePath, _ request: DownloadRequest, completion: @escaping DownloadCompletion)
    /// The synced path that `path` (perhaps a placeholder's name) stands for.
    func residentPath(_ path: RelativePath) throws -> RelativePath
    func isPlaceholder(_ path: RelativePath) -> Bool

    func evict(_ path: RelativePath) throws -> EntryInfo?
    func pin(_ path: RelativePath) throws -> EntryInfo?
    func unpin(_ path: RelativePath) throws -> EntryInfo?
}

/// The whole pair the control server serves.
public typealias ControlContext = PairView & PairCommands & PairResidency

/// The runtime serves the control server by handing each question to its engine.
extension PairRuntime: PairView {
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
    public func localMetadata(of path: RelativePath) throws -> FileMetadata? { try engine.local.metadata(of: path) }
    public func versions(of path: RelativePath) throws -> [VersionStore.Version] { try engine.versions(of: path) }
    public func allVersions(under folder: RelativePath) throws -> [(file: RelativePath, version: VersionStore.Version)] {
        try engine.allVersions(under: folder)
    }
    public func restorePlan(_ path: RelativePath, versionID: String?, at time: WallInstant?, to target: RelativePath?) throws -> [RestorePlanItem] {
        try engine.restorePlan(path, versionID: versionID, at: time, to: target)
    }
}

extension PairRuntime: PairCommands {
    public func sync(_ paths: Set<RelativePath>?) { engine.sync(paths) }
    public func resolve(_ path: RelativePath, keep choice: ConflictChoice) throws { try engine.resolve(path, keep: choice) }
    public func restore(_ items: [RestorePlanItem]) throws { try engine.restore(items) }
    public func pruneVersions() -> (removed: Int, removedBytes: Int64)? { engine.pruneVersions() }
    public func confirmDeletes() -> Int { engine.confirmDeletes() }
    public func revertDeletes() -> Int { engine.revertDeletes() }
}

extension PairRuntime: PairResidency {
    public func residentPath(_ path: RelativePath) throws -> RelativePath { try engine.residentPath(path) }
    public func isPlaceholder(_ path: RelativePath) -> Bool { engine.isPlaceholder(path) }
    public func evict(_ path: RelativePath) throws -> EntryInfo? { try engine.evict(path) }
    public func pin(_ path: RelativePath) throws -> EntryInfo? { try engine.pin(path) }
    public func unpin(_ path: RelativePath) throws -> EntryInfo? { try engine.unpin(path) }
}
