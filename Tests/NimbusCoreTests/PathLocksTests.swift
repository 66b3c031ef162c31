import NimbusVocabulary
import Testing
import Synchronization
import NimbusSystem
@testable import NimbusCore

fileprivate func rp(_ s: String) -> RelativePath { try! RelativePath(validating: s) }

fileprivate struct Boom: Error {}

/// A value that escaping closures in several tasks can update.
fileprivate final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func update<R: Sendable>(_ change: (inout Value) -> R) -> R { mutex.withLock { change(&$0) } }
    var value: Value { mutex.withLock { $0 } }
}

/// Yields until `condition` holds: the tests wait on state the code under test exposes,
/// never on time.
fileprivate func eventually(_ what: String, _ condition: () -> Bool) async {
    for _ in 0..<1_000_000 {
        if condition() { return }
        await Task.yield()
    }
    Issue.record("never happened: \(what)")
}

/// The time limit only catches a deadlock (a waiter never granted). It is not a measure of
/// speed: in a full `swift test` on two cores, the other suites' blocking waits hold the
/// cooperative threads these tasks need, and a one-minute limit was exceeded while nothing
/// was wrong.
@Suite(.timeLimit(.minutes(10))) struct PathLocksTests {
    @Test func grantsInArrivalOrderAcrossTasks() async throws {
        let locks = PathLocks()
        let order = Shared<[Int]>([])
        let first = try #require(locks.tryLock(rp("a"), .exclusive))
        var tasks: [Task<Void, any Error>] = []
        for n in 0..<50 {
            // All on one chain of paths, so each waits for the one before it.
            let path = rp(["a", "a/x", "."][n % 3])
            tasks.append(Task { try await locks.withLock(path, .exclusive) { order.update { $0.append(n) } } })
            await eventually("task \(n) is queued") { locks.snapshot.count == n + 2 }
        }
        locks.unlock(first)
        for task in tasks { try await task.value }
        #expect(order.value == Array(0..<50))
        #expect(locks.snapshot.isEmpty)
    }

    @Test func cancelledWaiterLeavesTheQueueAndTheNextWaiterGetsTheLock() async throws {
        let locks = PathLocks()
        let reader = try #require(locks.tryLock(rp("a"), .shared))
        let writer = Task { try await locks.lock(rp("a"), .exclusive) }
        await eventually("the writer waits") { locks.snapshot.count == 2 }
        // Compatible with the reader, but queued behind the writer.
        let nextReader = Task { try await locks.lock(rp("a/b"), .shared) }
        await eventually("the next reader waits") { locks.snapshot.count == 3 }
        writer.cancel()
        await #expect(throws: CancellationError.self) { try await writer.value }
        let granted = try await nextReader.value  // while the first reader still holds "a"
        #expect(locks.snapshot.map(\.id) == [reader.id, granted.id])
        locks.unlock(reader)
        locks.unlock(granted)
        #expect(locks.snapshot.isEmpty)
    }

    @Test func alreadyCancelledTaskQueuesNothing() async {
        let locks = PathLocks()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await locks.lock(rp("a"), .shared)
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(locks.snapshot.isEmpty)
    }

    /// The holder unlocks as the waiter is cancelled: one after the other in both orders, then
    /// at once from two tasks. The waiter either gets the lock (and unlocks it) or gives up,
    /// and no lock is ever left behind.
    @Test func cancellationRacingAGrantLeaksNothing() async throws {
        let locks = PathLocks()
        var granted = 0, cancelled = 0
        for round in 0..<400 {
            let holder = try #require(locks.tryLock(rp("a"), .exclusive), "round \(round): a lock leaked")
            let waiter = Task { () async throws -> Bool in
                do {
                    locks.unlock(try await locks.lock(rp("a"), .exclusive))
                    return true
                } catch is CancellationError {
                    return false
                }
            }
            await eventually("the waiter waits") { locks.snapshot.count == 2 }
            switch round % 4 {
            case 0:
                waiter.cancel()
                locks.unlock(holder)
            case 1:
                locks.unlock(holder)
                waiter.cancel()  // granted already: the waiter keeps the lock
            default:
                await withTaskGroup(of: Void.self) { group in
                    let actions: [@Sendable () -> Void] = [{ locks.unlock(holder) }, { waiter.cancel() }]
                    for action in round % 4 == 2 ? actions : actions.reversed() { group.addTask(operation: action) }
                }
            }
            let gotIt = try await waiter.value
            if gotIt { granted += 1 } else { cancelled += 1 }
            if round % 4 < 2 { #expect(gotIt == (round % 4 == 1), "round \(round)") }
            #expect(locks.snapshot.isEmpty, "round \(round)")
        }
        print("cancel/grant race: granted \(granted), cancelled \(cancelled)")
    }

    @Test func withLockReleasesWhenTheBodyThrows() async {
        let locks = PathLocks()
        await #expect(throws: Boom.self) {
            try await locks.withLock(rp("a"), .exclusive) {
                #expect(locks.holders(of: rp("a/b")).count == 1)
                throw Boom()
            }
        }
        #expect(locks.snapshot.isEmpty)
    }

    @Test func tryLockNeitherWaitsNorOvertakes() async throws {
        let locks = PathLocks()
        let lease = try #require(locks.tryLock(rp("a"), .shared, owner: OwnerID(rawValue: 1)))
        #expect(locks.tryLock(rp("a/f"), .exclusive) == nil)  // leased by an application: skip it
        #expect(locks.snapshot.count == 1)  // and nothing was queued
        let writer = Task { try await locks.lock(rp("a"), .exclusive) }
        await eventually("the writer waits") { locks.snapshot.count == 2 }
        #expect(locks.tryLock(rp("a/g"), .shared) == nil)  // would overtake the writer
        let elsewhere = try #require(locks.tryLock(rp("b"), .exclusive))
        locks.unlock(lease)
        locks.unlock(try await writer.value)
        locks.unlock(elsewhere)
        #expect(locks.snapshot.isEmpty)
    }

    @Test func releaseAllFreesAClosedConnectionsLeases() async throws {
        let locks = PathLocks()
        let app = OwnerID(rawValue: 1)
        let lease = try #require(locks.tryLock(rp("docs"), .exclusive, owner: app))
        let music = try #require(locks.tryLock(rp("music"), .shared))
        let appWaits = Task { try await locks.lock(rp("music"), .exclusive, owner: app) }
        await eventually("the application waits") { locks.snapshot.count == 3 }
        let copy = Task { try await locks.lock(rp("docs/report.pdf"), .exclusive) }
        await eventually("the copy waits") { locks.snapshot.count == 4 }
        locks.releaseAll(owner: app)
        await #expect(throws: PathLocks.Withdrawn.self) { try await appWaits.value }
        let copying = try await copy.value
        locks.unlock(lease)  // already released with its connection: harmless
        #expect(locks.snapshot.map(\.id) == [music.id, copying.id])
        locks.unlock(copying)
        locks.unlock(music)
        #expect(locks.snapshot.isEmpty)
    }
}
