import NimbusCore
import NimbusVocabulary

/// A synced path gone from one side, found by a look that no report of its deletion brought.
///
/// Events say where to look (DESIGN §4), and a look can come between a change and the events
/// that explain it. The case seen: the engine uploads `big`, the event of its own write brings a
/// look at `big`, and just before that look a program renames `big` to `renamed`. The look sees
/// `big` gone and nothing at its inode in the pass (`renamed` is not in it): a deletion, and the
/// next batch, with the rename's own events, copies `renamed` as a new file (a 100 MB rename
/// became a 100 MB copy, and a delete and a create on the other side). The rename's events are
/// already queued when the look runs, so its deletion waits, once, for the next batch: that one
/// brings both names and the rename is found by the inode. A deletion that nothing explains
/// goes ahead when the path is looked at again, at most `unreportedDeletionWait` later.
extension SyncEngine {
    /// How long a deletion nobody reported waits for the events that explain it: the batcher's
    /// quiet for deletions, which is also about how late a deletion's own report comes.
    static var unreportedDeletionWait: Duration { .milliseconds(200) }

    /// Leaves out of this pass the synced paths (each with everything below it) gone from one
    /// side that neither `reported` names nor a folder above them, and whose inode the pass
    /// sees nowhere else on that side, unless they were left out once already; each is looked
    /// at again after `unreportedDeletionWait`. `reported` nil: every deletion is taken as
    /// reported (a full scan, a pass asked for by hand). `heldInThisSync` collects what this
    /// `sync` call held, so that its later rounds hold it too rather than decide it.
    func holdUnreportedDeletions(_ views: inout Views, reported: Set<RelativePath>?, heldInThisSync: inout Set<RelativePath>) {
        let heldBefore = state.withLock { $0.heldDeletions }.subtracting(heldInThisSync)
        guard reported != nil || !heldBefore.isEmpty else { return }
        var holding = Set<RelativePath>()
        if let reported {
            let seen: [Side: Set<UInt64>] = [.local: Set(views.local.values.map(\.inode)),
                                             .cloud: Set(views.cloud.values.map(\.inode))]
            // Shorter paths first, so that a folder is held before what is inside it.
            for (path, base) in views.base.sorted(by: { $0.key.bytes.count < $1.key.bytes.count })
            where !Self.isBelowOrAt(path, any: heldBefore.union(holding)) && !Self.isBelowOrAt(path, any: reported) {
                let vanished = Side.allCases.contains { side in
                    views[side][path] == nil && views[side.other][path] != nil && !seen[side]!.contains(base[side].inode)
                }
                if vanished { holding.insert(path) }
            }
        }
        let retryAt = clock.monotonicNow + Self.unreportedDeletionWait
        let looked = Set(views.base.keys)
        state.withLock { s in
            // Held once: what this pass looks at again is decided now, whatever it is.
            s.heldDeletions.subtract(looked)
            s.heldDeletions.formUnion(holding)
            for path in holding { s.retries[path] = min(s.retries[path] ?? retryAt, retryAt) }
        }
        heldInThisSync.formUnion(holding)
        guard !holding.isEmpty else { return }
        log.debug("\(holding.count) path(s) gone without a report of it, first \(holding.min()!): waiting for the events that explain it")
        let keep: (RelativePath) -> Bool = { !Self.isBelowOrAt($0, any: holding) }
        views.base = views.base.filter { keep($0.key) }
        views.local = views.local.filter { keep($0.key) }
        views.cloud = views.cloud.filter { keep($0.key) }
        views.placeholders = views.placeholders.filter { keep($0.key) }
        views.strays = views.strays.filter { keep($0.key) }
    }

    /// Whether `path` or a folder above it is among `paths`.
    static func isBelowOrAt(_ path: RelativePath, any paths: Set<RelativePath>) -> Bool {
        guard !paths.isEmpty else { return false }
        var current = path
        while true {
            if paths.contains(current) { return true }
            if current.isRoot { return false }
            current = current.parent
        }
    }
}

extension SyncEngine.Views {
    /// One side's current entries.
    subscript(side: Side) -> [RelativePath: FileMetadata] {
        side == .local ? local : cloud
    }
}
