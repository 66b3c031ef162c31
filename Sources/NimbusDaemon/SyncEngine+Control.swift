import NimbusCore
import NimbusSystem
import NimbusVocabulary

extension SyncEngine {
    /// How many paths are in conflict, without building the list (`status` asks often).
    public var conflictCount: Int { state.withLock { $0.index.conflicts } }

    /// How many paths are in `error` now (failed, waiting for a retry).
    public var errorCount: Int { state.withLock { $0.transient.values.count { $0.message != nil } } }

    /// How many paths are being copied, and how many are in `error` (for the status line).
    public var activityCounts: (inProgress: Int, errors: Int) {
        state.withLock { s in (s.transient.values.count(where: \.isInProgress), s.transient.values.count { $0.message != nil }) }
    }

    /// Whether `path` is synced and not downloaded (a placeholder stands for it).
    public func isPlaceholder(_ path: RelativePath) -> Bool {
        state.withLock { $0.index[path]?.isPlaceholder == true }
    }

    /// Whether `path` is the suffix-style placeholder file of a not-downloaded file (a file
    /// synced under the placeholder's own name is not).
    public func isPlaceholderStandIn(_ path: RelativePath) -> Bool {
        guard let target = Placeholder.target(of: path) else { return false }
        return state.withLock { $0.index[target]?.isPlaceholder == true && $0.index[path]?.isPlaceholder != false }
    }

    /// Every synced path's record, as the journal has it.
    var records: [RelativePath: PathRecord] { state.withLock { $0.index.records } }

    /// The paths whose deletion the mass-delete guard holds.
    public var heldDeletePaths: Set<RelativePath> { state.withLock { Set($0.heldDeletes.map(\.path)) } }

    /// Hands back what a large pass left unused: the spare room of the index and of the
    /// per-path tables, then the heap's free pages.
    public func returnFreeMemory() {
        state.withLock { $0.releaseSpareCapacity() }
        ProcessSupport.returnFreeMemory()
    }

    /// The entries directly in `directory` (or everything below it when `recursive`), sorted,
    /// for the control protocol's `list`: from the scan's metadata and one look at the index
    /// under one lock, instead of an lstat and a lock per entry, so that a listing of 10 000
    /// files takes milliseconds (issue #4).
    public func listEntries(under directory: RelativePath, recursive: Bool) throws -> [EntryInfo] {
        guard !Self.isNimbusOwn(directory) else {
            throw EngineRequestError(kind: .notFound, message: "\(directory) belongs to Nimbus itself (its own working files), not to the synced files")
        }
        guard let meta = try local.metadata(of: directory) else {
            throw EngineRequestError(kind: .notFound, message: "\(directory) does not exist in the local folder")
        }
        guard meta.kind == .directory else { return entry(directory).map { [$0] } ?? [] }
        let scan = try local.scan(directory) { recursive && !self.isExcluded($0) }
        let found = scan.entries.filter { (recursive || $0.path.parent == directory) && !isExcluded($0.path) }
        let shown = Set(found.map(\.path))
        // Failed cloud files with nothing here (`entry`) are listed too, or `ls --state error`
        // would not show what status counts.
        let failedElsewhere = state.withLock { s in
            s.transient.filter { path, state in
                state.message != nil && s.index[path] == nil && !shown.contains(path)
                    && (recursive ? directory.contains(path) && path != directory : path.parent == directory)
            }.keys
        }.compactMap { entry($0, local: nil) }
        let listed = state.withLock { s in
            found.compactMap { item -> EntryInfo? in
                // A placeholder is listed as the file it stands for.
                if let target = Placeholder.target(of: item.path), let record = s.index[target], record.isPlaceholder,
                   s.index[item.path]?.isPlaceholder != false {
                    return Self.describe(target, current: nil, record: record, transient: s.transient[target])
                }
                return Self.describe(item.path, current: item.metadata, record: s.index[item.path], transient: s.transient[item.path])
            }
        }
        return (listed + failedElsewhere).sorted { $0.path < $1.path }
    }
}

extension SyncEngine.EngineState {
    /// A Swift dictionary keeps the room it grew to when its entries leave. The copies of a
    /// batch are all in progress (`transient`) until the batch is installed, so an initial
    /// sync of 10 000 files left 16 384 empty slots (half a MiB) there for good.
    mutating func releaseSpareCapacity() {
        index.shrinkToFit()
        transient.releaseSpareCapacity()
        retries.releaseSpareCapacity()
        retryCount.releaseSpareCapacity()
        recentUploads.releaseSpareCapacity()
    }
}

extension Dictionary {
    /// Moves the entries into a table sized for them when they fill less than a quarter of
    /// the room (a table that grew to hold its entries is at least half full).
    mutating func releaseSpareCapacity() {
        guard capacity > 64, capacity > count * 4 else { return }
        var compact = Self(minimumCapacity: count)
        for (key, value) in self { compact[key] = value }
        self = compact
    }
}
