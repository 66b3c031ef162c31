import NimbusCore
import NimbusSystem
import NimbusVocabulary

extension SyncEngine {
    /// The mass-delete guard (DESIGN §3): a batch deleting more than `maxDeletePercent` of the
    /// tracked entries on one side, and more than `massDeleteMinimum`, is held until the user
    /// confirms or reverts. Deletions already held stay held in later passes.
    func guardDeletes(_ plan: Plan) -> Plan {
        let s = settings
        let since = clock.monotonicNow - Self.deletionWindow
        let (tracked, alreadyHeld, recent) = state.withLock { s in
            for side in Side.allCases { s.recentDeletions[side]!.removeAll { $0 < since } }
            return (s.index.count, Set(s.heldDeletes.map(\.path)), s.recentDeletions)
        }
        let (held, newlyHeldOn) = deletionsToHold(plan, tracked: tracked, alreadyHeld: alreadyHeld, recentDeletions: recent.mapValues(\.count),
                                                  maxPercent: s.maxDeletePercent, minimum: s.massDeleteMinimum)
        for side in newlyHeldOn {
            log.warning("holding \(plan.deletions(on: side).count) deletions in the \(side) folder (more than \(s.maxDeletePercent)% of \(tracked) synced entries): if the other folder was emptied by mistake, run 'nimbusctl revert-deletes'; to apply them, run 'nimbusctl confirm-deletes'")
            emit(.deletionsHeld(on: side, plan.deletions(on: side).map(\.path)))
        }
        guard !held.isEmpty else { return plan }
        let filtered = withoutHeld(plan, held)
        state.withLock { s in
            let known = Set(s.heldDeletes.map(\.path))
            s.heldDeletes += held.filter { !known.contains($0.path) }
            s.status.heldDeletes = s.heldDeletes.count
        }
        return filtered
    }

    /// How long applied deletions keep counting toward the mass-delete guard: longer than the
    /// longest quiet the event batcher waits for before it takes a pause for the end of an
    /// `rm` (30 s, `EventBatcher`), so that when a stalled `rm` was split anyway, its first
    /// part still counts when the rest comes.
    static var deletionWindow: Duration { .seconds(45) }

    func noteDeletion(on side: Side) {
        let now = clock.monotonicNow
        state.withLock { $0.recentDeletions[side]!.append(now) }
    }

    /// Applies the held deletions (each still re-checked against what was planned).
    public func confirmDeletes() -> Int {
        checkOwner()
        let held = state.withLock { s in
            // The user decided: earlier deletions no longer count toward the guard.
            defer { s.heldDeletes = []; s.status.heldDeletes = 0; s.recentDeletions = [.local: [], .cloud: []] }
            return s.heldDeletes
        }
        guard !held.isEmpty else { return 0 }
        var plan = Plan()
        plan.actions = held
        let again = execute(plan)
        commit()
        sync(Set(held.map(\.path)).union(again))
        return held.count
    }

    /// Undoes the held deletions: the deleted entries are brought back from the other side.
    public func revertDeletes() -> Int {
        checkOwner()
        let held = state.withLock { s in
            // The user decided: earlier deletions no longer count toward the guard.
            defer { s.heldDeletes = []; s.status.heldDeletes = 0; s.recentDeletions = [.local: [], .cloud: []] }
            return s.heldDeletes
        }
        guard !held.isEmpty else { return 0 }
        // Forgetting the base makes the surviving copies look new, so they are copied back.
        for action in held {
            let paths = state.withLock { $0.index.subtree(action.path) }
            for path in paths { setRecord(path, nil) }
        }
        commit()
        sync(Set(held.map(\.path)))
        return held.count
    }
}
