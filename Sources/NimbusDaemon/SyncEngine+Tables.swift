import NimbusCore
import NimbusVocabulary

/// What the engine's per-path tables hold at one moment, read under one lock. Tests check
/// the engine's bookkeeping through it (a burst's room given back, only the failed copy
/// retried, a deletion no longer waiting) instead of reading `state`, which nothing outside
/// the `SyncEngine` files touches (`LayeringTests.nothingOutsideTheEngineTouchesItsState`).
struct EngineTables {
    /// The paths shown as in progress or failed (`EngineState.transient`).
    var transientPaths: Set<RelativePath>
    /// The room the table of those paths holds (it is given back when the engine idles).
    var transientCapacity: Int
    /// The paths waiting to be looked at again (`EngineState.retries`).
    var retryPaths: Set<RelativePath>
    /// Deletions nothing reported, waiting once for the events that explain them
    /// (`EngineState.heldDeletions`, `holdUnreportedDeletions`).
    var deletionsAwaitingEvents: Set<RelativePath>
}

extension SyncEngine {
    /// A copy of what the per-path tables hold now; safe from any thread.
    var tables: EngineTables {
        state.withLock { s in
            EngineTables(transientPaths: Set(s.transient.keys), transientCapacity: s.transient.capacity,
                         retryPaths: Set(s.retries.keys), deletionsAwaitingEvents: s.heldDeletions)
        }
    }
}
