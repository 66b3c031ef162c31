import Synchronization
import Testing
import NimbusSystem
@testable import NimbusDaemon

/// The threads that prepare a batch's copies (issue 15): work runs on them, not on the
/// caller's; each round of work runs in a scope of its own; `finish` ends every thread.
@Suite struct WorkerThreadsTests {
    /// Which scope each thread is in now, and every scope opened and closed.
    final class Scopes: Sendable {
        struct State {
            var current: [UInt: Int] = [:]
            var opened = 0
            var closed = 0
        }
        let state = Mutex(State())

        func run(_ body: () -> Void) {
            state.withLock { s in
                s.opened += 1
                s.current[ProcessSupport.currentThreadIdentity] = s.opened
            }
            body()
            state.withLock { s in
                s.closed += 1
                s.current[ProcessSupport.currentThreadIdentity] = nil
            }
        }

        var currentOfThisThread: Int? { state.withLock { $0.current[ProcessSupport.currentThreadIdentity] } }
    }

    @Test func workRunsOnThePoolsThreadsInAScopePerRoundAndFinishEndsThem() {
        let scopes = Scopes()
        let workers = WorkerThreads<(index: Int, thread: UInt, scope: Int?)>(count: 2, name: "test-workers") { scopes.run($0) }
        func round(_ indices: Range<Int>) -> [(index: Int, thread: UInt, scope: Int?)] {
            let tickets = indices.map { index in
                workers.submit { (index, ProcessSupport.currentThreadIdentity, scopes.currentOfThisThread) }
            }
            return tickets.map { $0.wait() }
        }
        let first = round(0..<200)
        workers.newRound()
        let second = round(200..<400)
        workers.finish()

        #expect((first + second).map(\.index) == Array(0..<400), "each ticket holds its own work's result")
        let threads = Set((first + second).map(\.thread))
        #expect(!threads.contains(ProcessSupport.currentThreadIdentity) && (1...2).contains(threads.count), "\(threads)")
        #expect((first + second).allSatisfy { $0.scope != nil }, "all work runs inside a scope")
        let firstScopes = Set(first.compactMap(\.scope)), secondScopes = Set(second.compactMap(\.scope))
        #expect(firstScopes.isDisjoint(with: secondScopes), "work after newRound runs in new scopes")
        let state = scopes.state.withLock { $0 }
        #expect(state.opened == state.closed && state.current.isEmpty, "finish ends every thread, closing its scope")
    }
}
