import NimbusVocabulary
import Synchronization

/// A lock granted by `PathLocks`. Give it back with `unlock`; unlocking it again, or after
/// `releaseAll(owner:)` took it, does nothing (ids are never reused).
public struct LockHandle: Hashable, Sendable {
    public let id: LockID
    public let path: RelativePath
    public let mode: LockMode
    public let owner: OwnerID?
}

/// The lock table for concurrent callers: `lock` suspends until the lock is granted, in FIFO
/// order (see `LockTable` for conflicts and fairness).
///
/// Cancellation: a task cancelled before its lock is granted gets `CancellationError`, and its
/// request leaves the queue at once, which may let later requests through. When the grant and
/// the cancellation race, exactly one wins under the mutex: either the caller receives the
/// handle (and must unlock it as usual), or the request is withdrawn and never granted.
///
/// Continuations are resumed after the mutex is released, each exactly once: whoever takes a
/// continuation out of `waiters` under the mutex is the one who resumes it.
public final class PathLocks: Sendable {
    /// Thrown to a `lock` still waiting when `releaseAll(owner:)` dropped its request.
    public struct Withdrawn: Error, Hashable, Sendable {}

    private typealias Waiter = CheckedContinuation<LockHandle, any Error>

    private struct Wakeup {
        let waiter: Waiter
        let result: Result<LockHandle, any Error>
    }

    private struct State {
        var table = LockTable()
        var nextID: UInt64 = 0
        /// Requests queued in the table, each with the suspended `lock` waiting for it.
        var waiters: [LockID: (handle: LockHandle, waiter: Waiter)] = [:]

        mutating func makeHandle(_ path: RelativePath, _ mode: LockMode, _ owner: OwnerID?) -> LockHandle {
            nextID += 1
            return LockHandle(id: LockID(rawValue: nextID), path: path, mode: mode, owner: owner)
        }

        /// Takes the waiters of `granted` out of `waiters`, to be resumed outside the mutex.
        mutating func wakeups(for granted: [LockID]) -> [Wakeup] {
            granted.map { id in
                // Only `lock` queues requests, and it registers a waiter in the same critical
                // section, so every queued id has one.
                guard let entry = waiters.removeValue(forKey: id) else {
                    preconditionFailure("\(id) was granted but nobody waits for it")
                }
                return Wakeup(waiter: entry.waiter, result: .success(entry.handle))
            }
        }
    }

    private let state = Mutex(State())

    public init() {}

    /// Waits until `path` can be locked in `mode`, in FIFO order, and returns the lock.
    /// Throws `CancellationError` if the task is cancelled first (also when it already is),
    /// or `Withdrawn` if `releaseAll(owner:)` drops the request.
    public func lock(_ path: RelativePath, _ mode: LockMode, owner: OwnerID? = nil) async throws -> LockHandle {
        let handle = state.withLock { $0.makeHandle(path, mode, owner) }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: Waiter) in
                let grantedNow: Bool? = state.withLock { state in
                    // Checked under the mutex: a cancellation that comes later runs `onCancel`,
                    // which needs the mutex and so finds the waiter registered below; one that
                    // came earlier has set the flag before its `onCancel` found nothing.
                    if Task.isCancelled { return nil }
                    if state.table.request(handle.id, path: path, mode: mode, owner: owner) { return true }
                    state.waiters[handle.id] = (handle, waiter)
                    return false
                }
                switch grantedNow {
                case nil: waiter.resume(throwing: CancellationError())
                case true?: waiter.resume(returning: handle)
                case false?: break
                }
            }
        } onCancel: {
            let wakeups = state.withLock { state -> [Wakeup] in
                // No waiter: not queued yet (the flag is seen above) or granted already (the
                // caller gets the lock).
                guard let entry = state.waiters.removeValue(forKey: handle.id) else { return [] }
                let granted = state.table.cancel(handle.id)
                return [Wakeup(waiter: entry.waiter, result: .failure(CancellationError()))]
                    + state.wakeups(for: granted)
            }
            Self.resume(wakeups)
        }
    }

    /// Locks `path` now if that needs no waiting, else returns nil without queueing. It does not
    /// overtake a waiting request it conflicts with.
    public func tryLock(_ path: RelativePath, _ mode: LockMode, owner: OwnerID? = nil) -> LockHandle? {
        state.withLock { state in
            guard state.table.isGrantable(path, mode: mode) else { return nil }
            let handle = state.makeHandle(path, mode, owner)
            let granted = state.table.request(handle.id, path: path, mode: mode, owner: owner)
            assert(granted, "isGrantable and request disagree")
            return handle
        }
    }

    /// Releases `handle` and wakes the requests this grants.
    public func unlock(_ handle: LockHandle) {
        let wakeups = state.withLock { state in state.wakeups(for: state.table.release(handle.id)) }
        Self.resume(wakeups)
    }

    /// Runs `body` holding the lock, and releases it however `body` ends.
    public func withLock<R>(
        _ path: RelativePath, _ mode: LockMode, owner: OwnerID? = nil,
        isolation: isolated (any Actor)? = #isolation,
        body: () async throws -> R
    ) async throws -> R {
        let handle = try await lock(path, mode, owner: owner)
        defer { unlock(handle) }
        return try await body()
    }

    /// Drops every lock and waiting request of `owner` (its connection closed); its waiting
    /// `lock` calls throw `Withdrawn`.
    public func releaseAll(owner: OwnerID) {
        let wakeups = state.withLock { state -> [Wakeup] in
            let dropped = state.table.requests(ownedBy: owner)
                .filter { $0.state == .waiting }
                .compactMap { state.waiters.removeValue(forKey: $0.id) }
                .map { Wakeup(waiter: $0.waiter, result: .failure(Withdrawn())) }
            return dropped + state.wakeups(for: state.table.releaseAll(owner: owner))
        }
        Self.resume(wakeups)
    }

    /// Every lock and waiting request, oldest first (the `locks` protocol method).
    public var snapshot: [LockInfo] { state.withLock { $0.table.snapshot } }

    /// Granted locks on `path`, above it or below it.
    public func holders(of path: RelativePath) -> [LockInfo] {
        state.withLock { $0.table.holders(of: path) }
    }

    private static func resume(_ wakeups: [Wakeup]) {
        for wakeup in wakeups { wakeup.waiter.resume(with: wakeup.result) }
    }
}
