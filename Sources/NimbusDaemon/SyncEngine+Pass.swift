import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// Starting, and one sync pass: scope, gather, plan, execute, commit (DESIGN §1, §4).
extension SyncEngine {
    /// Recovery at start: removes temporary files a crash left (see `removeTemporariesAtStart`),
    /// then syncs everything (`firstPass`) and counts the versions store (`pruneVersions`).
    public func start() {
        checkOwner()
        firstPass()
        writePendingMarks()
        pruneVersions()
    }

    /// What a start needs before it may say the first sync is done: leftover temporaries
    /// removed, placeholders prepared, everything synced and committed. The runtime marks the
    /// uploaded files and prunes the versions store after that, once it has told systemd it is
    /// ready (issue 15).
    func firstPass() {
        checkOwner()
        // Temporaries first: those a crash left in a read-only folder can be removed only
        // while it still has the bits lent to it.
        removeTemporariesAtStart()
        restoreLentModes()
        // Before any pass: a pass in one style would misread placeholders of the other.
        if rootsAreReady() { preparePlaceholders() }
        marker?.placeholdersKnown()
        if store.marksMayBeMissing { markEverySyncedFileAgain() }
        state.withLock { $0.marksWaitForRuntime = true }
        sync(nil)
        state.withLock { $0.marksWaitForRuntime = false }
    }

    /// Syncs the given paths (and everything below them), or everything when nil.
    /// `reportedGone`, when given, names the paths whose deletion (or move away) the watchers
    /// reported: another synced path found gone waits once for the events that explain it
    /// (`holdUnreportedDeletions`). Nil takes every deletion as reported.
    public func sync(_ paths: Set<RelativePath>?, reportedGone: Set<RelativePath>? = nil) {
        checkOwner()
        guard !isStopping, rootsAreReady() else { return }
        setActivity(.syncing)
        defer { setActivity(.idle) }
        forgetEchoes()
        var scope = scopeRoots(paths.map(withPlaceholderNames).map(withHardLinkNames))
        // A pass normally settles in one round; a second one follows only when something
        // changed under our feet (an expectation failed) or a conflict moved a file.
        var held = Set<RelativePath>()
        for _ in 0..<4 where !scope.isEmpty {
            checkCreatesDue(in: scope)
            var views = gather(scope)
            let renamedFrom = renameSources(outside: scope, views)
            if scope != [.root] && views.needsWholeFolder {
                scope = [.root]
                views = gather(scope)
            } else if !renamedFrom.isEmpty {
                scope = scopeRoots(Set(scope).union(renamedFrom))
                views = gather(scope)
            }
            // Stopped mid-scan: what was seen is partial, and nothing is planned from it.
            if isStopping { break }
            forgetFailuresOfVanishedPaths(in: scope, views)
            let reported = scope == [.root] ? nil : reportedGone.map(withPlaceholderNames)
            holdUnreportedDeletions(&views, reported: reported, heldInThisSync: &held)
            var plan = makePlan(views)
            // Stopped while comparing contents: nothing is done from a half comparison.
            if isStopping { break }
            tellSkipped(plan.skipped, views, scope: scope)
            plan = guardDeletes(adapt(plan, views))
            // Placeholder repairs first: what they touch is not in this pass's plan, and is
            // looked at again once they are done.
            plan.actions = views.repairs + plan.actions
            guard !plan.actions.isEmpty else { break }
            let again = execute(plan)
            commit()
            if isStopping { break }
            scope = scopeRoots(again.union(views.withheld))
        }
        if !state.withLock({ $0.marksWaitForRuntime }) { writePendingMarks() }
        forgetLastErrorIfOver()
        removeLeftoverCopies()
        sweepTemporariesIfDue()
    }

    /// `paths` and the other synced names of the files among them that have several (hard
    /// links): a write through one name changes them all, and inotify reports only the name
    /// written through.
    func withHardLinkNames(_ paths: Set<RelativePath>) -> Set<RelativePath> {
        state.withLock { s in paths.reduce(into: paths) { all, path in all.formUnion(s.index.otherLocalNames(of: path)) } }
    }

    func setActivity(_ activity: EngineActivity) {
        let tracked = state.withLock { $0.index.count }
        updateStatus { status in
            status.activity = activity
            status.tracked = tracked
        }
    }

    /// The outermost paths to look at. A path whose parent was never synced is widened to
    /// its highest unsynced ancestor, so a new folder is created before what is inside it.
    func scopeRoots(_ paths: Set<RelativePath>?) -> [RelativePath] {
        guard let paths else { return [.root] }
        let index = state.withLock { $0.index }
        var widened = Set<RelativePath>()
        for var path in paths {
            while !path.isRoot, !path.parent.isRoot, index[path.parent] == nil { path = path.parent }
            widened.insert(path)
        }
        var roots: [RelativePath] = []
        for path in widened.sorted() where !roots.contains(where: { $0.contains(path) }) { roots.append(path) }
        return roots
    }

    /// Synced paths outside `scope` whose inode turned up at a new path inside it: the source
    /// of a rename whose destination was seen first (a file moved into a folder created just
    /// before). With them in scope the rename is propagated as a rename, not a copy.
    func renameSources(outside scope: [RelativePath], _ views: Views) -> Set<RelativePath> {
        state.withLock { s in
            var sources = Set<RelativePath>()
            for (side, view) in [(Side.local, views.local), (.cloud, views.cloud)] {
                for (path, meta) in view where views.base[path]?[side].inode != meta.inode {
                    guard let source = s.index.path(ofInode: meta.inode, on: side), source != path,
                          !scope.contains(where: { $0.contains(source) }) else { continue }
                    sources.insert(source)
                }
            }
            return sources
        }
    }

    func makePlan(_ views: Views) -> Plan {
        var plan = reconcile(base: views.base, local: views.local, cloud: views.cloud, namer: namer)
        var hashes = SideHashes()
        // A path may need hashes for two reasons in turn (verifying an ambiguous base, then
        // comparing both sides), so allow a few rounds.
        for _ in 0..<3 where !plan.needsHashes.isEmpty {
            // A placeholder has no content of its own; it always equals its base.
            for request in plan.needsHashes where !(request.side == .local && views.placeholders[request.path] != nil) {
                do {
                    let hash = try system(request.side).contentHash(of: request.path, checkpoint: stopCheckpoint)
                    if request.side == .local { hashes.local[request.path] = hash } else { hashes.cloud[request.path] = hash }
                } catch is CancellationError {
                    return plan  // Stopping mid-hash: the pass acts on none of it (`sync`).
                } catch {
                    log.warning("cannot read \(request.path) in the \(request.side) folder to compare it: \(error)")
                    scheduleRetry(request.path, error: "\(error)")
                }
            }
            plan = reconcile(base: views.base, local: views.local, cloud: views.cloud, hashes: hashes, namer: namer)
        }
        return plan
    }

    /// Names conflict copies made now, in local time.
    var namer: ConflictNamer {
        let s = settings
        // Asked only when a conflict is named: a lookup in the journal's index and two lstats.
        return ConflictNamer(device: s.deviceName, wallTime: clock.wallNow, utcOffsetSeconds: s.utcOffsetSeconds) { [unowned self] path in
            state.withLock { $0.index[path] != nil } || existsOnEitherSide(path)
        }
    }

    func existsOnEitherSide(_ path: RelativePath) -> Bool {
        (try? local.metadata(of: path)) != nil || (try? cloud.metadata(of: path)) != nil
    }

    /// Makes the records of the pass durable. It runs after the batch's flush of the names
    /// (`installBatch`), never beside it, even when the journal is on another filesystem than
    /// the folders (issue 15 asked whether the two could overlap): a record that is durable
    /// before the rename it describes would, after a crash that lost the rename, say the file
    /// was synced where it is missing, and the next pass would take that as a deletion there
    /// and delete the other side's file.
    func commit() {
        checkOwner()
        // The first record makes the pair paired, after which a missing marker halts it: the
        // local marker must be durable before (`RootMarkers.check`). Held records are written
        // by the next commit: a retry with back-off (`retryCommitIfDue`), the next pass that
        // changes something, or the stop.
        if state.withLock({ $0.localMarkerAwaitsFlush }), let error = flush([.local])[.local] {
            return holdCommit("cannot flush the local folder: \(error). The journal is written once it can be (tried again "
                + "after a pause that grows up to 5 minutes); until then, changes are re-checked at the next start.")
        }
        // Names and modes the pass changed (`Action.awaitsFlushBeforeCommit`), unless a batch's
        // flush of the names made them durable already: one syncfs per filesystem, not an
        // fsync per folder touched (1 000 renames in 100 folders: 4 ms against 320 ms here).
        let changed = state.withLock { $0.changesAwaitFlush }
        if !changed.isEmpty, let (side, error) = flush(changed).first {
            return holdCommit("cannot flush the \(side) folder after changing names or modes there: \(error). The journal is written "
                + "once it can be (tried again after a pause that grows up to 5 minutes); until then, changes are re-checked at the next start.")
        }
        // Marks written after this commit are lost in a crash before them: the note makes the
        // next start write them all again.
        if state.withLock({ !$0.pendingMarks.isEmpty }) { store.marksMayBeMissing = true }
        do {
            try store.commit()
            try store.compactIfNeeded(state.withLock { $0.index.all.map { (key: $0.0, value: $0.1) } })
        } catch {
            return holdCommit("cannot write the journal: \(error). Sync continues and the journal is tried again after a pause "
                + "that grows up to 5 minutes; changes since the last successful write will be re-checked at the next start.")
        }
        if let failures = state.withLock({ s in
            defer { s.heldCommit = nil; s.status.journalError = nil }
            return s.heldCommit?.failures
        }) {
            log.notice("the journal is written again, after \(failures) failed \(failures == 1 ? "try" : "tries")")
        }
    }

    /// Tries a held commit again once its pause is over (the runtime calls it at every turn):
    /// without it, records held by a failed flush waited for the next pass that changed
    /// something, or the stop.
    public func retryCommitIfDue() {
        checkOwner()
        guard let due = state.withLock({ $0.heldCommit?.due }), clock.monotonicNow >= due else { return }
        commit()
    }

    /// Schedules the next try of a failed commit with back-off; `problem` is logged as an
    /// error once per streak of failures, the tries after it at debug level.
    private func holdCommit(_ problem: String) {
        let failures = state.withLock { s in
            let failures = (s.heldCommit?.failures ?? 0) + 1
            s.heldCommit = (clock.monotonicNow + Self.retryDelay(attempt: failures), failures)
            s.status.journalError = problem
            return failures
        }
        if failures == 1 { log.error(problem) } else { log.debug("failed again (try \(failures)): \(problem)") }
    }
}
