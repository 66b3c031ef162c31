import NimbusCore
import NimbusSystem

extension SyncEngine {
    /// How many paths are in conflict, without building the list (`status` asks often).
    public var conflictCount: Int {
        state.withLock { s in s.index.records.values.reduce(0) { $0 + ($1.conflictCopy == nil ? 0 : 1) } }
    }

    /// The same answer as `entries(under:recursive:)`, for the control protocol's `list`, but
    /// from the scan's metadata and one look at the index under one lock, instead of an lstat
    /// (four system calls through the root) and a lock per entry: a listing of 10 000 files
    /// must take milliseconds (issue #4). The state of each entry follows `entry(_:)`; the
    /// control tests check that `list` and `stat` agree.
    public func listEntries(under directory: RelativePath, recursive: Bool) throws -> [EntryInfo] {
        guard let meta = try local.metadata(of: directory) else {
            throw EngineRequestError(kind: .notFound, message: "\(directory) does not exist in the local folder")
        }
        guard meta.kind == .directory else { return entry(directory).map { [$0] } ?? [] }
        let scan = try local.scan(directory) { recursive && !self.isExcluded($0) }
        let found = scan.entries.filter { (recursive || $0.path.parent == directory) && !isExcluded($0.path) }
        let known = state.withLock { s in found.map { (s.index[$0.path], s.transient[$0.path]) } }
        var result: [EntryInfo] = []
        result.reserveCapacity(found.count)
        for (item, (record, transient)) in zip(found, known) {
            let current = item.metadata
            var fileState: FileState = .local
            if let transient {
                fileState = transient
            } else if let record {
                if record.conflictCopy != nil {
                    fileState = .conflict
                } else if !current.isUnchanged(from: record.base.local) {
                    fileState = .local  // changed here, waiting to upload
                } else {
                    fileState = .downloaded
                }
            }
            result.append(EntryInfo(path: item.path, kind: current.kind, size: current.kind == .file ? current.size : 0,
                                    mtime: current.mtime, state: fileState, conflictCopy: record?.conflictCopy,
                                    residency: record?.residency ?? .auto))
        }
        return result.sorted { $0.path < $1.path }
    }
}
