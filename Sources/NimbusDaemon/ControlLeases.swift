import NimbusCore
import NimbusSystem
import NimbusVocabulary
import Synchronization

/// Why a lease was not granted.
public enum LeaseFailure: Error, Sendable, Equatable {
    /// The time limit passed while others held the path; `holders` are those in the way.
    case busy(holders: [LockInfo])
    /// The owner's connection closed while waiting.
    case withdrawn
}

/// The per-path lock table as the control protocol's `acquire`/`release`/`locks` see it
/// (DESIGN §7, issue #8). The server holds leases per connection (`owner`) and calls
/// `releaseAll` when a connection closes, however it closes. The default implementation sits
/// on `PathLocks`; the engine can honour the same leases by locking that `PathLocks` itself.
public protocol LeaseProvider: Sendable {
    /// Grants `path` in `mode` to `owner`, in arrival order. `timeout` nil waits until granted
    /// or until `releaseAll(owner:)`; zero grants only what is free now. `completion` is
    /// called exactly once, on any thread.
    func acquire(_ path: RelativePath, mode: LockMode, owner: OwnerID, timeout: Duration?,
                 completion: @escaping @Sendable (Result<LockID, LeaseFailure>) -> Void)
    /// Releases a lease `owner` holds; false when it holds no such lease.
    func release(_ lease: LockID, owner: OwnerID) -> Bool
    /// Releases every lease of `owner` and withdraws its waiting requests.
    func releaseAll(owner: OwnerID)
    /// Every lease and waiting request, oldest first.
    func snapshot() -> [LockInfo]
}

/// `LeaseProvider` on a `PathLocks` table.
public final class PathLocksLeaseProvider: LeaseProvider {
    public let locks: PathLocks

    private struct State {
        /// Granted leases by their number. Lease numbers are the protocol's own (1, 2, …):
        /// the lock table's ids are shared with the engine's per-action locks.
        var handles: [LockID: LockHandle] = [:]
        var leaseOfLock: [LockID: LockID] = [:]
        var nextLease: UInt64 = 1
        /// Acquisitions still running per owner, and owners that closed while some ran: a
        /// lock granted to a closed owner is given back at once instead of leaking.
        var running: [OwnerID: Int] = [:]
        var closed: Set<OwnerID> = []
    }

    private let state = Mutex(State())

    public init(locks: PathLocks = PathLocks()) { self.locks = locks }

    public func acquire(_ path: RelativePath, mode: LockMode, owner: OwnerID, timeout: Duration?,
                        completion: @escaping @Sendable (Result<LockID, LeaseFailure>) -> Void) {
        if timeout == .zero {
            guard let handle = locks.tryLock(path, mode, owner: owner) else {
                return completion(.failure(.busy(holders: self.shown(locks.holders(of: path)))))
            }
            return completion(register(handle).map { .success($0) } ?? .failure(.withdrawn))
        }
        state.withLock { $0.running[owner, default: 0] += 1 }
        let locks = self.locks
        let waiting = Task {
            defer { self.finished(owner) }
            do {
                let handle = try await locks.lock(path, mode, owner: owner)
                completion(self.register(handle).map { .success($0) } ?? .failure(.withdrawn))
            } catch is CancellationError {
                completion(.failure(.busy(holders: self.shown(locks.holders(of: path)))))
            } catch {
                completion(.failure(.withdrawn))
            }
        }
        if let timeout {
            // Cancelling after the grant does nothing: the lease is kept and reported.
            Task {
                try? await Task.sleep(for: timeout)
                waiting.cancel()
            }
        }
    }

    /// Records a granted lock under a new lease number, or gives it back when its owner is gone.
    private func register(_ handle: LockHandle) -> LockID? {
        let lease = state.withLock { s -> LockID? in
            guard let owner = handle.owner, !s.closed.contains(owner) else { return nil }
            let lease = LockID(rawValue: s.nextLease)
            s.nextLease += 1
            s.handles[lease] = handle
            s.leaseOfLock[handle.id] = lease
            return lease
        }
        if lease == nil { locks.unlock(handle) }
        return lease
    }

    private func finished(_ owner: OwnerID) {
        state.withLock { s in
            let left = s.running[owner, default: 1] - 1
            s.running[owner] = left > 0 ? left : nil
            if left <= 0 { s.closed.remove(owner) }
        }
    }

    public func release(_ lease: LockID, owner: OwnerID) -> Bool {
        let handle = state.withLock { s -> LockHandle? in
            guard let handle = s.handles[lease], handle.owner == owner else { return nil }
            s.handles[lease] = nil
            s.leaseOfLock[handle.id] = nil
            return handle
        }
        guard let handle else { return false }
        locks.unlock(handle)
        return true
    }

    public func releaseAll(owner: OwnerID) {
        state.withLock { s in
            if s.running[owner] != nil { s.closed.insert(owner) }
            s.handles = s.handles.filter { $0.value.owner != owner }
            s.leaseOfLock = s.leaseOfLock.filter { s.handles[$0.value] != nil }
        }
        locks.releaseAll(owner: owner)
    }

    /// Applications' leases and waiting requests (not the engine's own short locks), granted
    /// ones under their lease numbers.
    public func snapshot() -> [LockInfo] { shown(locks.snapshot) }

    /// Lock-table entries as the protocol shows them: applications' only, under lease numbers.
    private func shown(_ infos: [LockInfo]) -> [LockInfo] {
        let numbers = state.withLock { $0.leaseOfLock }
        return infos.filter { $0.owner != nil }.map { info in
            var shown = info
            if let lease = numbers[info.id] { shown.id = lease }
            return shown
        }
    }
}
