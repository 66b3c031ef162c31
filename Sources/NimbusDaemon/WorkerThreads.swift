import Dispatch
import NimbusSystem
import Synchronization

/// A few threads of their own that run the work handed to them, each result waiting in a
/// `Ticket` for the one thread that handed the work in (the engine's, which collects them in
/// the order it chose: issue 15, the copies of a batch prepared two or more at a time).
///
/// Plain threads, one queue behind a `Mutex`, semaphores to sleep on: not Dispatch's global
/// queues, whose cooperative pool other work (and `swift test`'s suites) can starve. The
/// threads start with the pool and end in `finish`, which the owner must call (it joins
/// them): none outlives the work it was started for.
///
/// Each thread runs its work inside `scope` (`DirectoryCache.keepingDirectoriesOpen`, whose
/// cache is per thread), opened afresh for the first work handed in after each `newRound`:
/// the owner starts a round once it has collected everything outstanding and before it
/// changes what a thread's scope may have kept (renames or removes a folder).
final class WorkerThreads<Output: Sendable>: Sendable {
    /// The result of one piece of work, filled in by the thread that ran it.
    final class Ticket: Sendable {
        private let ready = DispatchSemaphore(value: 0)
        private let output = Mutex<Output?>(nil)

        /// Whether the work has finished (`wait` would not block).
        var isReady: Bool { output.withLock { $0 != nil } }

        /// Blocks until the work has finished; returns its output. Called once.
        func wait() -> Output {
            ready.wait()
            return output.withLock { $0! }
        }

        /// Blocks until the work has finished, leaving its output for `wait`.
        func waitUntilReady() {
            ready.wait()
            ready.signal()
        }

        fileprivate func fill(_ value: Output) {
            output.withLock { $0 = value }
            ready.signal()
        }
    }

    private struct Work: Sendable {
        let run: @Sendable () -> Output
        let ticket: Ticket
        let round: Int
    }

    private struct Queue {
        var waiting: [Work] = []
        var round = 0
        var finished = false
    }

    typealias Scope = @Sendable (() -> Void) -> Void

    let count: Int
    private let queue = Mutex(Queue())
    /// Signalled once per piece of work handed in, and once per thread by `finish`.
    private let available = DispatchSemaphore(value: 0)
    private let threads = Mutex<[JoinableThread]>([])
    private let scope: Scope

    /// Starts `count` threads named `name` (for `ps -L`).
    init(count: Int, name: String, scope: @escaping Scope = { $0() }) {
        precondition(count > 0, "a pool needs at least one thread")
        self.count = count
        self.scope = scope
        let started = (0..<count).map { _ in ProcessSupport.startJoinableThread(name: name) { [self] in work() } }
        threads.withLock { $0 = started }
    }

    /// Hands `run` to the next free thread.
    func submit(_ run: @escaping @Sendable () -> Output) -> Ticket {
        let ticket = Ticket()
        queue.withLock { queue in
            precondition(!queue.finished, "work handed to a finished pool")
            queue.waiting.append(Work(run: run, ticket: ticket, round: queue.round))
        }
        available.signal()
        return ticket
    }

    /// Work handed in from now on runs in a new `scope` on each thread. Call it only when no
    /// work is outstanding (every ticket waited for).
    func newRound() {
        queue.withLock { $0.round += 1 }
    }

    /// Lets the threads end once the work handed in is done, and waits for them.
    func finish() {
        queue.withLock { $0.finished = true }
        let started = threads.withLock { threads in
            defer { threads = [] }
            return threads
        }
        for _ in started { available.signal() }
        for thread in started { thread.join() }
    }

    private func take() -> Work? {
        available.wait()
        return queue.withLock { queue in queue.waiting.isEmpty ? nil : queue.waiting.removeFirst() }
    }

    private func work() {
        var next = take()
        while let first = next {
            scope {
                var work: Work? = first
                while let current = work, current.round == first.round {
                    current.ticket.fill(current.run())
                    work = take()
                }
                next = work
            }
        }
    }
}
