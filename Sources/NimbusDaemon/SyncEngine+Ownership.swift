import NimbusCore
import NimbusSystem

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

    /// Whether sync is paused: the one record of it (the status phase `.paused`), read by
    /// the runtime, the control server and `status` alike.
    public var isPaused: Bool { state.withLock { $0.status.phase == .paused } }

    /// While paused, changes are collected but nothing is copied; resuming makes the phase idle.
    public func setPaused(_ paused: Bool) {
        checkOwner()
        state.withLock { $0.status.phase = paused ? .paused : .idle }
        emit(.phase(paused ? .paused : .idle))
    }
}
