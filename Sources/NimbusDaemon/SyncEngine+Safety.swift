import NimbusCore
import NimbusSystem
import NimbusVocabulary

extension SyncEngine {
    /// The mass-delete guard (DESIGN §3): a batch deleting more than `maxDeletePercent` of the
    /// tracked entries on one side, and more than `massDeleteMinimum`, is held until the user
    /// confirms or reverts. Deletions already held stay held in later passes.
    func guardDeletes(_ plan: Plan) -> Plan {
        let s = settings
        releaseExpiredDeletions()
        let (tracked, alreadyHeld, recent) = state.withLock { s in
            (s.index.count, Set(s.heldDeletes.map(\.path)), s.appliedDeletions.counts)
        }
        let (held, newlyHeldOn) = deletionsToHold(plan, tracked: tracked, alreadyHeld: alreadyHeld, recentDeletions: recent,
                                                  maxPercent: s.maxDeletePercent, minimum: s.massDeleteMinimum)
        guard !held.isEmpty else { return plan }
        // Published before it is told: a `status` asked as soon as the log line or the event
        // is seen must already count what they announce (it read 0 in between).
        state.withLock { s in
            let known = Set(s.heldDeletes.map(\.path))
            s.heldDeletes += held.filter { !known.contains($0.path) }
            s.publishHeld()
        }
        for side in newlyHeldOn {
            let holding = plan.deletions(on: side).map(\.path)
            let applied = state.withLock { $0.appliedDeletions.restorable(on: side) }
            log.warning(Self.holdingMessage(holding.count, on: side, applied: applied, tracked: tracked, maxPercent: s.maxDeletePercent))
            emit(.deletionsHeld(on: side, holding, alreadyApplied: applied))
        }
        return withoutHeld(plan, held)
    }

    static func holdingMessage(_ count: Int, on side: Side, applied: Int, tracked: Int, maxPercent: Int) -> String {
        let seconds = Int(deletionWindow.components.seconds)
        let already = applied == 0 ? ""
            : "; \(applied) deletion(s) of the same kind applied there in the last \(seconds) s are kept and come back with them"
        return "holding \(count) deletions in the \(side) folder (more than \(maxPercent)% of \(tracked) synced entries)\(already): "
            + "if the other folder was emptied by mistake, run 'nimbusctl revert-deletes'; to apply them, run 'nimbusctl confirm-deletes'"
    }

    /// How long applied deletions keep counting toward the mass-delete guard: longer than the
    /// longest quiet the event batcher waits for before it takes a pause for the end of an
    /// `rm` (30 s, `EventBatcher`), so that when a stalled `rm` was split anyway, its first
    /// part still counts when the rest comes.
    static var deletionWindow: Duration { .seconds(45) }

    /// A deletion was applied on `side`; what it removed is kept as `kept` for the window.
    func noteDeletion(_ path: RelativePath, on side: Side, kept: KeptContent) {
        let now = clock.monotonicNow
        state.withLock { s in
            s.appliedDeletions.append(AppliedDeletion(path: path, side: side, at: now, kept: kept))
            if !s.heldDeletes.isEmpty { s.publishHeld() }
        }
    }

    /// Applies the held deletions (each still re-checked against what was planned), and lets
    /// go of what the deletions applied before, and these, were keeping.
    public func confirmDeletes() -> Int {
        checkOwner()
        let held = state.withLock { s in
            // The user decided: earlier deletions no longer count toward the guard.
            defer { s.heldDeletes = []; s.publishHeld() }
            return s.heldDeletes
        }
        defer { letGo(state.withLock { $0.appliedDeletions.take(on: Set(Side.allCases)) }) }
        guard !held.isEmpty else { return 0 }
        var plan = Plan()
        plan.actions = held
        let again = execute(plan)
        commit()
        sync(Set(held.map(\.path)).union(again))
        return held.count
    }

    /// Undoes the mass deletion as a whole: the held deletions, and the deletions applied on
    /// the same side within the window before the guard tripped (or since), whose content
    /// was kept. Returns how many deletions were undone.
    public func revertDeletes() -> Int {
        checkOwner()
        let (held, applied) = state.withLock { s in
            // The user decided: earlier deletions there no longer count toward the guard.
            defer { s.heldDeletes = []; s.publishHeld() }
            return (s.heldDeletes, s.appliedDeletions.take(on: s.holdingSides))
        }
        guard !held.isEmpty else { return 0 }
        let restored = changingNames(on: Set(applied.map(\.side))) { restore(applied) }
        // Forgetting the base makes the surviving copies look new, so they are copied back.
        for action in held {
            let paths = state.withLock { $0.index.subtree(action.path) }
            for path in paths { setRecord(path, nil) }
        }
        commit()
        sync(Set(held.map(\.path)).union(restored))
        return held.count + restored.count
    }
}

extension SyncEngine.EngineState {
    /// The sides where deletions are held.
    var holdingSides: Set<Side> { Set(heldDeletes.compactMap(\.side)) }

    /// Publishes the held deletions, and the applied ones a revert brings back with them.
    mutating func publishHeld() {
        status.heldDeletes = heldDeletes.count
        status.keptDeletes = holdingSides.reduce(0) { $0 + appliedDeletions.restorable(on: $1) }
    }
}
