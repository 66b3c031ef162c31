import NimbusVocabulary

/// Turns a stream of watch hints into batches of paths to sync (DESIGN §1: events say where
/// to look). Pure: the current time is an argument.
///
/// - A settled change (closed after writing, deleted, renamed, a new directory or symlink,
///   changed permissions) is ready at once.
/// - A file being written (`modified`, or created and still open) waits until it is closed or
///   has been quiet for `quietPeriod`, so half-written files are not uploaded.
/// - Deletions wait until no deletion has come for a quiet period, so that an `rm -r` or a
///   disk being emptied arrives as one batch and the mass-delete guard sees all of it. The
///   wait grows with what is pending: `deletionQuiet` (200 ms) for a few files, and once
///   `manyDeletions` are pending, `manyDeletionsQuiet` (5 s) or as long as the deletions
///   have been coming, whichever is longer, up to `manyDeletionsQuietLimit` (30 s). A
///   deleting process stalled on a loaded machine then does not hand a first part, too small
///   for the guard, over as a batch of its own; a few deletions are as quick as ever.
///   Other changes to a deleted path or a folder above one wait with the deletions.
/// - Past `maximumPending` paths, or after a lost event, the batch becomes a full rescan.
public struct EventBatcher: Sendable {
    public enum Hint: Sendable, Equatable {
        case settled(RelativePath)
        case writing(RelativePath)
        case deleted(RelativePath)
        /// Events were lost or the tree is unknown: look at everything.
        case rescanAll
    }

    public enum Batch: Sendable, Equatable {
        case paths(Set<RelativePath>)
        case everything
    }

    public var quietPeriod: Duration
    public var deletionQuiet: Duration
    public var maximumPending: Int
    static let manyDeletions = 10
    /// The least quiet many deletions wait for, in `deletionQuiet`s: 25 × 200 ms = 5 s.
    static let manyDeletionsQuiet: Int64 = 25
    /// The most: 150 × 200 ms = 30 s, however long the deletions have been coming.
    static let manyDeletionsQuietLimit: Int64 = 150

    private var ready: Set<RelativePath> = []
    private var writing: [RelativePath: MonotonicInstant] = [:]
    private var deletions: Set<RelativePath> = []
    private var deletionsDue = MonotonicInstant.origin
    /// When the first of the pending deletions came.
    private var deletionsStarted = MonotonicInstant.origin
    private var rescan = false

    public init(quietPeriod: Duration = .seconds(2), deletionQuiet: Duration = .milliseconds(200), maximumPending: Int = 50_000) {
        self.quietPeriod = quietPeriod
        self.deletionQuiet = deletionQuiet
        self.maximumPending = maximumPending
    }

    public mutating func add(_ hint: Hint, now: MonotonicInstant) {
        switch hint {
        case .settled(let path):
            writing[path] = nil
            ready.insert(path)
        case .writing(let path):
            // Written again after it was closed: wait for the next close (or quiet) instead
            // of copying it mid-write. Every write restarts the quiet period.
            ready.remove(path)
            writing[path] = now + quietPeriod
        case .deleted(let path):
            writing[path] = nil
            if deletions.isEmpty { deletionsStarted = now }
            deletions.insert(path)
            deletionsDue = now + deletionWait(lasted: now - deletionsStarted)
        case .rescanAll:
            rescan = true
        }
        if ready.count + writing.count + deletions.count > maximumPending { rescan = true }
    }

    /// The quiet that ends the pending deletions, which have been coming for `lasted`. Many
    /// deletions look like an `rm -r` under way: wait longer for the rest, so that a slow or
    /// busy machine does not hand its first part over as a batch of its own (the guard lets a
    /// part under its minimum or share through). Nor is a pause as long as the deleting so far
    /// taken as its end: a process that deletes slowly (a loaded machine) also stalls longer.
    private func deletionWait(lasted: Duration) -> Duration {
        guard deletions.count >= Self.manyDeletions else { return deletionQuiet }
        return min(max(deletionQuiet * Self.manyDeletionsQuiet, lasted), deletionQuiet * Self.manyDeletionsQuietLimit)
    }

    /// Everything that is ready at `now`, or nil when nothing is.
    public mutating func take(now: MonotonicInstant) -> Batch? {
        if rescan {
            rescan = false
            ready = []
            writing = [:]
            deletions = []
            return .everything
        }
        if !deletions.isEmpty && deletionsDue <= now {
            ready.formUnion(deletions)
            deletions = []
        }
        for (path, deadline) in writing where deadline <= now {
            writing[path] = nil
            ready.insert(path)
        }
        if !deletions.isEmpty && !ready.isEmpty {
            // A path to look at that is, or holds, a pending deletion (an earlier write of a
            // file now deleted, the folder emptied) would show the engine part of an `rm`
            // under way: it waits with the deletions.
            var scope = deletions
            for path in deletions {
                var folder = path.parent
                while !folder.isRoot, scope.insert(folder).inserted { folder = folder.parent }
            }
            let waiting = ready.intersection(scope)
            ready.subtract(waiting)
            deletions.formUnion(waiting)
        }
        guard !ready.isEmpty else { return nil }
        defer { ready = [] }
        return .paths(ready)
    }

    /// When the next file being written becomes due (nil: nothing is waiting).
    public var nextDeadline: MonotonicInstant? {
        if rescan || !ready.isEmpty { return .origin }
        let writes = writing.values.min()
        guard !deletions.isEmpty else { return writes }
        return min(writes ?? deletionsDue, deletionsDue)
    }

    public var isIdle: Bool { !rescan && ready.isEmpty && writing.isEmpty && deletions.isEmpty }
}
