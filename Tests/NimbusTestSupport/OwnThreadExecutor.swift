import NimbusSystem
import Synchronization

/// A task executor that runs its jobs on a thread of its own, so that an async test keeps
/// running while the shared pool is busy with others.
///
/// Why: Swift Testing starts every test at once as a task on the cooperative pool, which has
/// one thread per core (two on the CI machine), and runs synchronous tests there too, each
/// holding its thread until it ends (a simulation computing, a daemon test polling). The pool
/// is first in, first out: an async test that awaits anything (an answer from a socket, a
/// `Task.sleep` between polls) is queued again behind every test not yet started. In a full
/// run that queue was 93 s long (measured with a heartbeat task and gdb, 2026-11-26), so a
/// test whose own work takes 0.06 s met its one-minute limit. With this executor preferred
/// (`OwnThreadExecutor.run`), the test and its child tasks resume here instead, at once.
///
/// The test must not block this thread waiting for work its own child tasks do on it: there
/// is one thread, as an actor has. Blocking waits belong on a thread of their own
/// (`Polling.blocking`).
public final class OwnThreadExecutor: TaskExecutor, Sendable {
    private let jobs = WaitingQueue<UnownedJob>()

    private init(name: String) {
        // The thread holds the executor for good: a job may name it (unowned) at any time.
        ProcessSupport.detachThread(name: name) { [self] in serve() }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        jobs.append(UnownedJob(job))
    }

    private func serve() {
        while true { jobs.next().runSynchronously(on: asUnownedTaskExecutor()) }
    }

    /// Executors no test runs on now. Each keeps its thread, idle, for the next test: as
    /// many threads as tests ran at once, not one per test.
    private static let idle = Mutex<[OwnThreadExecutor]>([])
    private static let made = Atomic(0)

    /// Runs `body` on an executor of its own for up to `limit`, timed there too: false when
    /// the limit came first, and `body` was then cancelled (and awaited).
    public static func run(limitedTo limit: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws -> Bool {
        try await run {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await body()
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: limit)
                    return false
                }
                defer { group.cancelAll() }
                return try await group.next() ?? false
            }
        }
    }

    /// Runs `body` (and the child tasks it makes) on an executor no other test uses meanwhile.
    public static func run<Result>(_ body: () async throws -> Result) async throws -> Result {
        // The kernel keeps 15 bytes of a thread's name: "own thread 9999".
        let executor = idle.withLock { $0.popLast() }
            ?? OwnThreadExecutor(name: "own thread \(made.add(1, ordering: .relaxed).newValue)")
        defer { idle.withLock { $0.append(executor) } }
        return try await withTaskExecutorPreference(executor) { try await body() }
    }
}
