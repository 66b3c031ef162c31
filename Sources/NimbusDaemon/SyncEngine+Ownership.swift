import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// Who may call the engine (see the note at `SyncEngine`), how it is stopped mid-pass, and
/// the one record of "paused".
extension SyncEngine {
    /// Makes the calling thread the engine's owner: from now on, debug builds trap when an
    /// entry point that changes files or the journal is called from another thread.
    public func claimOwnership() {
        owner.store(ProcessSupport.currentThreadIdentity, ordering: .relaxed)
    }

    /// Debug builds: traps when the engine has an owner and this is not its thread. A compare
    /// of two integers; nothing at all in release builds.
    @inline(__always)
    func checkOwner(_ function: StaticString = #function) {
        #if DEBUG
        let owner = owner.load(ordering: .relaxed)
        precondition(owner == 0 || owner == ProcessSupport.currentThreadIdentity,
                     "SyncEngine.\(function) called off the engine thread; use PairRuntime.perform")
        #endif
    }

    /// Asks the pass under way to stop between two files, leaving the journal and both folders
    /// consistent (what was done is committed; the rest is found again by the next start's
    /// scan). Safe from any thread, a signal handler's included. No pass starts afterwards.
    public func requestStop() {
        stopRequested.store(true, ordering: .relaxed)
    }

    /// Whether `requestStop` was called.
    public var isStopping: Bool { stopRequested.load(ordering: .relaxed) }

    /// Throws `CancellationError` once `requestStop` was called: asked inside long work (each
    /// directory of a scan, each chunk of a copy, from any thread), so that a SIGTERM waits
    /// for one chunk, not a whole tree or a multi-GB file. A load of an atomic.
    func stopIfRequested() throws {
        if isStopping { throw CancellationError() }
    }

    /// The checkpoint of long work on the engine thread (a scan's entries, a hash's chunks):
    /// a stop ends it, and the watchdog is fed meanwhile (a hash of a multi-GiB file lasts
    /// longer than systemd's watchdog interval).
    var stopCheckpoint: Checkpoint {
        { [self] in
            try stopIfRequested()
            heartbeat()
        }
    }

    /// Whether sync is paused: the one record of it (`EngineStatus.paused`), read by the
    /// runtime, the control server and `status` alike.
    public var isPaused: Bool { state.withLock { $0.status.paused } }

    /// While paused, changes are collected but nothing is copied. Neither pausing nor
    /// resuming touches a halt (a missing root), which only its root's return ends.
    public func setPaused(_ paused: Bool) {
        checkOwner()
        updateStatus { $0.paused = paused }
    }

    /// Changes the published status and tells `onEvent` when the phase it shows changed.
    /// Returns what `change` returns.
    @discardableResult
    func updateStatus<R>(_ change: (inout EngineStatus) -> R) -> R {
        let (result, before, after) = state.withLock { s in
            let before = s.status.phase
            let result = change(&s.status)
            return (result, before, s.status.phase)
        }
        if before != after { emit(.phase(after)) }
        return result
    }
}
