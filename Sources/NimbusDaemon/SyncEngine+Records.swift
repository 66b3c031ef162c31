import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// The executor's bookkeeping: the records (base entries) it writes after an action, and the
/// transient states (uploading, downloading, an error) it shows while one runs.
extension SyncEngine {
    func setRecord(_ path: RelativePath, _ record: PathRecord?) {
        checkOwner()  // The journal is the engine thread's (a copy worker must never get here).
        state.withLock { s in
            s.index[path] = record
            s.retryCount[path] = nil
            s.toldFailures[path] = nil
        }
        if let record { store.put(path, record) } else { store.remove(path) }
        if let record { tellMarker(path, record) }
    }

    /// The listener knows real-name placeholders by inode with their path and cloud file:
    /// every record written for one (a rename, a folder renamed above it, a cloud change)
    /// tells it, so that a fill always fetches the right cloud file.
    func tellMarker(_ path: RelativePath, _ record: PathRecord) {
        guard record.isPlaceholder, placeholderStyle == .realName, let marker else { return }
        marker.register(path, local: record.base.local, cloud: record.base.cloud)
    }

    /// Changes the record of `path`, or creates it from `creating`.
    func updateRecord(_ path: RelativePath, creating base: BaseEntry? = nil, _ change: (inout PathRecord) -> Void) {
        checkOwner()
        let record: PathRecord? = state.withLock { s in
            guard var record = s.index[path] ?? base.map({ PathRecord(base: $0) }) else { return nil }
            change(&record)
            s.index[path] = record
            s.retryCount[path] = nil
            s.toldFailures[path] = nil
            return record
        }
        if let record {
            store.put(path, record)
            tellMarker(path, record)
        }
    }

    /// Records the base after writing `path` on `side` from `source`: the other side as it
    /// was planned, not as it is now — a change made there meanwhile must still look like a
    /// change at the next pass, not be absorbed into the base.
    func recordWrite(_ path: RelativePath, on side: Side, source: FileMetadata) throws {
        guard let written = try system(side).metadata(of: path) else { return setRecord(path, nil) }
        let base = side == .cloud ? BaseEntry(local: source, cloud: written) : BaseEntry(local: written, cloud: source)
        updateRecord(path, creating: base) { record in
            let old = record.base
            let sameContent = written.kind == .file && old.kind == .file && old[side].size == written.size
                && old[side].mtime == written.mtime
            record.base = BaseEntry(local: base.local, cloud: base.cloud, hash: sameContent ? old.hash : nil,
                                    isAmbiguous: sameContent && old.isAmbiguous)
        }
    }

    /// Records what both sides hold at `path` now. A file whose content did not change
    /// (a chmod, a rename) keeps its hash and ambiguity.
    func refresh(_ path: RelativePath) {
        guard let l = try? local.metadata(of: path), let c = try? cloud.metadata(of: path) else {
            return setRecord(path, nil)
        }
        updateRecord(path, creating: BaseEntry(local: l, cloud: c)) { record in
            let old = record.base
            let sameContent = l.kind == .file && old.kind == .file && old.local.size == l.size && old.local.mtime == l.mtime
            record.base = BaseEntry(local: l, cloud: c, hash: sameContent ? old.hash : nil,
                                    isAmbiguous: sameContent && old.isAmbiguous)
        }
    }

    /// A file changed so recently that a same-size write within the same timestamp tick
    /// would not show in its metadata.
    func isFresh(_ metadata: FileMetadata) -> Bool {
        metadata.kind == .file && clock.wallNow - WallInstant(mtime: metadata.mtime) < BaseEntry.ambiguityWindow
    }

    func rekey(from: RelativePath, to: RelativePath) {
        checkOwner()
        let moved: [(RelativePath, PathRecord)] = state.withLock { s in
            let paths = s.index.subtree(from)
            let moved = paths.map { ($0, s.index[$0]!) }
            s.index.rekey(from: from, to: to)
            return moved
        }
        for (path, record) in moved {
            store.remove(path)
            store.put(path.rebased(from: from, to: to)!, record)
            tellMarker(path.rebased(from: from, to: to)!, record)
        }
    }

    func setTransient(_ path: RelativePath, _ fileState: FileState) {
        state.withLock { $0.transient[path] = fileState }
        emit(.stateChanged(path, fileState))
    }

    /// `local`: the local file's metadata when the caller has just read or recorded it (an
    /// install), which saves reading it again per file.
    func clearTransient(_ path: RelativePath, local: FileMetadata? = nil) {
        let wasFailed = state.withLock { s -> Bool? in
            guard let old = s.transient.removeValue(forKey: path) else { return nil }
            if old.message != nil { s.toldFailures[path] = nil }
            return old.message != nil
        }
        if state.withLock({ $0.lastErrorPath == path }) { forgetLastErrorIfOver() }
        guard let wasFailed, let now = entry(path, local: local)?.state else { return }
        emit(.stateChanged(path, now))
        if wasFailed { publishState(of: path) }
    }
}
