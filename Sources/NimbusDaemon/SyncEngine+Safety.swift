import NimbusCore
import NimbusSystem

extension SyncEngine {
    /// The mass-delete guard (DESIGN §3): a batch deleting more than `maxDeletePercent` of the
    /// tracked entries on one side, and more than `massDeleteMinimum`, is held until the user
    /// confirms or reverts. Deletions already held stay held in later passes.
    func guardDeletes(_ plan: Plan) -> Plan {
        let s = settings
        let (tracked, alreadyHeld) = state.withLock { ($0.index.count, Set($0.heldDeletes.map(\.path))) }
        var held: [Action] = []
        for side in Side.allCases {
            let deletions = plan.deletions(on: side)
            let newOnes = deletions.filter { !alreadyHeld.contains($0.path) }
            if newOnes.count > s.massDeleteMinimum && newOnes.count * 100 > tracked * s.maxDeletePercent {
                held += deletions
                log.warning("holding \(deletions.count) deletions in the \(side) folder (more than \(s.maxDeletePercent)% of \(tracked) synced entries): if the other folder was emptied by mistake, run 'nimbusctl revert-deletes'; to apply them, run 'nimbusctl confirm-deletes'")
            } else {
                held += deletions.filter { alreadyHeld.contains($0.path) }
            }
        }
        guard !held.isEmpty else { return plan }
        let heldPaths = Set(held.map(\.path))
        var filtered = plan
        // Also hold what would be created where a held deletion removes something.
        filtered.actions = plan.actions.filter { action in
            !heldPaths.contains(where: { $0.contains(action.path) })
        }
        state.withLock { s in
            let known = Set(s.heldDeletes.map(\.path))
            s.heldDeletes += held.filter { !known.contains($0.path) }
            s.status.heldDeletes = s.heldDeletes.count
        }
        return filtered
    }

    /// Applies the held deletions (each still re-checked against what was planned).
    public func confirmDeletes() -> Int {
        let held = state.withLock { s in
            defer { s.heldDeletes = []; s.status.heldDeletes = 0 }
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
        let held = state.withLock { s in
            defer { s.heldDeletes = []; s.status.heldDeletes = 0 }
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
