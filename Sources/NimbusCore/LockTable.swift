import NimbusVocabulary

/// `.shared` locks on overlapping paths may be held together; an `.exclusive` one overlaps
/// nothing else.
public enum LockMode: String, Hashable, Sendable, CustomStringConvertible {
    case shared, exclusive
    public var description: String { rawValue }
}

/// Names one lock request. The caller chooses it; it must be unique among live requests.
public struct LockID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (a: LockID, b: LockID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "lock \(rawValue)" }
}

/// Whose lock it is, for `releaseAll(owner:)`: an application's control connection holding
/// leases (DESIGN §7). The daemon's own locks have no owner.
public struct OwnerID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "owner \(rawValue)" }
}

/// One request as the `locks` protocol method shows it.
public struct LockInfo: Hashable, Sendable {
    public enum State: String, Hashable, Sendable { case granted, waiting }
    public var id: LockID
    public let path: RelativePath
    public let mode: LockMode
    public let owner: OwnerID?
    public let state: State
}

/// The per-path lock table as a pure state machine: no I/O, no clock, no waiting. `PathLocks`
/// puts an async API over it; the control protocol's leases and the daemon's per-file locks
/// share one table, so the daemon never touches a path an application holds (DESIGN §7).
///
/// Conflicts: two locks conflict when one path contains the other (the same path, an ancestor,
/// a descendant; the root contains everything) and at least one of them is exclusive.
///
/// Fairness: requests are served in arrival order. A request is granted only when it conflicts
/// with no granted lock and with no earlier request still waiting, so a stream of readers
/// cannot starve a waiting writer. Invariant after every call: no waiting request could be
/// granted.
///
/// Cost, for a path of depth d: `request`, and a `release` or `cancel` that unblocks nobody,
/// are O(d) hash look-ups, whatever the number of locks. One that may unblock someone walks the
/// queue from its head and stops at the first request that blocks everyone it could unblock;
/// `releaseAll(owner:)` walks the whole queue once. `snapshot` and `holders` scan everything.
public struct LockTable: Sendable {
    private struct Request: Sendable {
        let chain: PathChain
        let mode: LockMode
        let owner: OwnerID?
        let sequence: UInt64
        var isGranted: Bool

        var path: RelativePath { chain.path }

        func conflicts(with other: Request) -> Bool {
            (mode == .exclusive || other.mode == .exclusive)
                && (path.contains(other.path) || other.path.contains(path))
        }
    }

    private struct QueueEntry: Sendable { let id: LockID, sequence: UInt64 }

    private var requests: [LockID: Request] = [:]
    private var granted = PathIndex()
    private var waiting = PathIndex()
    /// Waiting requests in arrival order. Entries of requests granted or withdrawn since stay
    /// in place and are skipped (`sequence` tells a stale entry from a reused id); `head` skips
    /// the stale prefix and `tidyQueue` drops the rest once they outnumber the live ones.
    private var queue: [QueueEntry] = []
    private var head = 0
    private var waitingCount = 0
    private var nextSequence: UInt64 = 0
    private var byOwner: [OwnerID: Set<LockID>] = [:]
    /// Queue entries looked at while granting, so tests can check the work stays linear
    /// without timing it.
    private(set) var queueEntriesVisited = 0

    public init() {}

    /// Grants `id` now (true) or queues it (false). `id` must not be in the table already.
    public mutating func request(_ id: LockID, path: RelativePath, mode: LockMode, owner: OwnerID?) -> Bool {
        precondition(requests[id] == nil, "\(id) is already in the lock table")
        nextSequence += 1
        let chain = PathChain(path)
        let grantNow = isGrantable(chain, mode)
        requests[id] = Request(chain: chain, mode: mode, owner: owner, sequence: nextSequence, isGranted: grantNow)
        if let owner { byOwner[owner, default: []].insert(id) }
        if grantNow {
            granted.insert(chain, mode)
        } else {
            waiting.insert(chain, mode)
            waitingCount += 1
            queue.append(QueueEntry(id: id, sequence: nextSequence))
        }
        return grantNow
    }

    /// Whether a request made now would be granted at once (for callers that must not wait).
    public func isGrantable(_ path: RelativePath, mode: LockMode) -> Bool {
        isGrantable(PathChain(path), mode)
    }

    private func isGrantable(_ chain: PathChain, _ mode: LockMode) -> Bool {
        // Every waiting request arrived before a new one, so the whole waiting index is the
        // set of earlier waiters that FIFO order makes it respect.
        !granted.conflicts(chain, mode) && !waiting.conflicts(chain, mode)
    }

    /// Drops `id`, granted or waiting, and returns the requests this grants, in FIFO order.
    /// An unknown id (already released, e.g. by `releaseAll(owner:)`) is ignored.
    public mutating func release(_ id: LockID) -> [LockID] {
        guard let removed = remove(id) else { return [] }
        defer { tidyQueue() }
        return grantUnblocked(by: removed)
    }

    /// Withdraws `id` if it is still waiting, and returns the requests this grants. A granted
    /// lock is left alone: a cancellation that lost the race with the grant must not take the
    /// lock from its new holder, who releases it instead.
    public mutating func cancel(_ id: LockID) -> [LockID] {
        guard let request = requests[id], !request.isGranted else { return [] }
        return release(id)
    }

    /// Drops every lock and request of `owner` (its connection closed) and returns the requests
    /// this grants, in FIFO order.
    public mutating func releaseAll(owner: OwnerID) -> [LockID] {
        guard let ids = byOwner[owner] else { return [] }
        for id in ids { _ = remove(id) }
        defer { tidyQueue() }
        return grantUnblocked(by: nil)
    }

    /// The request `id`, if it is in the table.
    public func info(_ id: LockID) -> LockInfo? {
        requests[id].map { Self.info(id, $0) }
    }

    /// Granted locks on `path`, above it or below it, oldest first. O(number of locks).
    public func holders(of path: RelativePath) -> [LockInfo] {
        infos { $0.isGranted && ($0.path.contains(path) || path.contains($0.path)) }
    }

    /// The requests of `owner`, granted and waiting, oldest first.
    public func requests(ownedBy owner: OwnerID) -> [LockInfo] {
        (byOwner[owner] ?? []).compactMap { id in requests[id].map { (id, $0) } }
            .sorted { $0.1.sequence < $1.1.sequence }
            .map { Self.info($0.0, $0.1) }
    }

    /// Every request, oldest first.
    public var snapshot: [LockInfo] { infos { _ in true } }

    public var isEmpty: Bool { requests.isEmpty }

    // MARK: - Internals

    private func infos(where include: (Request) -> Bool) -> [LockInfo] {
        requests.filter { include($0.value) }
            .sorted { $0.value.sequence < $1.value.sequence }
            .map { Self.info($0.key, $0.value) }
    }

    private static func info(_ id: LockID, _ request: Request) -> LockInfo {
        LockInfo(id: id, path: request.path, mode: request.mode, owner: request.owner,
                 state: request.isGranted ? .granted : .waiting)
    }

    /// Takes `id` out of every index; its queue entry, if any, goes stale.
    private mutating func remove(_ id: LockID) -> Request? {
        guard let request = requests.removeValue(forKey: id) else { return nil }
        if request.isGranted {
            granted.remove(request.chain, request.mode)
        } else {
            waiting.remove(request.chain, request.mode)
            waitingCount -= 1
        }
        if let owner = request.owner {
            byOwner[owner]?.remove(id)
            if byOwner[owner]?.isEmpty == true { byOwner[owner] = nil }
        }
        return request
    }

    private func isLive(_ entry: QueueEntry) -> Bool {
        guard let request = requests[entry.id] else { return false }
        return request.sequence == entry.sequence && !request.isGranted
    }

    /// Grants, in FIFO order, the waiting requests that `removed` was the last obstacle for
    /// (nil: several locks went, consider every waiter).
    private mutating func grantUnblocked(by removed: Request?) -> [LockID] {
        // Only a waiter that conflicted with the removed lock can have lost its last obstacle:
        // the others are blocked by something still there (a waiter granted meanwhile still
        // blocks whoever it blocked while waiting). None of those: the hot path ends here.
        if let removed, !waiting.conflicts(removed.chain, removed.mode) { return [] }
        var newlyGranted: [LockID] = []
        var passedOver = PathIndex()  // earlier requests that stay waiting
        var index = head
        while index < queue.count {
            let entry = queue[index]
            index += 1
            queueEntriesVisited += 1
            guard isLive(entry), let request = requests[entry.id] else { continue }
            let mayUnblock = removed.map { request.conflicts(with: $0) } ?? true
            if mayUnblock && !granted.conflicts(request.chain, request.mode)
                && !passedOver.conflicts(request.chain, request.mode) {
                requests[entry.id]!.isGranted = true
                waiting.remove(request.chain, request.mode)
                waitingCount -= 1
                granted.insert(request.chain, request.mode)
                newlyGranted.append(entry.id)
            } else {
                passedOver.insert(request.chain, request.mode)
            }
            // This request is on the removed lock's path or above it, so it overlaps every
            // later candidate; if it conflicts with all of them (it is exclusive, or they all
            // are because the removed lock was shared) none can pass it, granted or not.
            if let removed, request.path.contains(removed.path),
               request.mode == .exclusive || removed.mode == .shared {
                break
            }
        }
        return newlyGranted
    }

    /// Skips the stale prefix of the queue and compacts it once stale entries outnumber the
    /// live ones, so each stale entry costs O(1) amortised.
    private mutating func tidyQueue() {
        while head < queue.count && !isLive(queue[head]) { head += 1 }
        if queue.count - waitingCount > waitingCount + 16 {
            queue = queue[head...].filter(isLive)
            head = 0
        }
    }
}
