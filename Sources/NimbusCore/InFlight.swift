import Synchronization

/// One in-flight operation per key: concurrent requests for the same path share one download
/// (DESIGN §5). The first caller for a key starts the operation; callers arriving while it
/// runs join it and receive the same value or error; once it has finished the key is free,
/// and the next call starts a new run.
///
/// Cancellation: a cancelled caller stops waiting at once and throws `CancellationError`. The
/// operation is never cancelled by its callers, since others may still wait for it and a
/// half-done download abandoned now would only be restarted by the next request. When every
/// caller has gone, the operation still runs to its end and its result is dropped; a caller
/// arriving meanwhile joins it.
public final class InFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private typealias Caller = CheckedContinuation<Value, any Error>

    private struct State {
        /// The callers waiting for each running operation (possibly none, if all cancelled).
        var flights: [Key: [UInt64: Caller]] = [:]
        var nextCaller: UInt64 = 0
    }

    private enum Arrival { case cancelled, joined, started }

    private let state = Mutex(State())

    public init() {}

    /// The result of `operation`, run once for all the callers that overlap on `key`.
    /// Only the first caller's `operation` runs; joiners' closures are ignored.
    public func run(_ key: Key, operation: @Sendable @escaping () async throws -> Value) async throws -> Value {
        let caller = state.withLock { state in
            state.nextCaller += 1
            return state.nextCaller
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Caller) in
                let arrival: Arrival = state.withLock { state in
                    // Checked under the mutex, so a cancellation either is seen here or finds
                    // the continuation registered below (see `PathLocks.lock`).
                    if Task.isCancelled { return .cancelled }
                    if state.flights[key] != nil {
                        state.flights[key]![caller] = continuation
                        return .joined
                    }
                    state.flights[key] = [caller: continuation]
                    return .started
                }
                switch arrival {
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .joined: break
                case .started: start(key, operation)
                }
            }
        } onCancel: {
            // Nil when not registered yet (seen above) or already resumed with the result.
            let continuation = state.withLock { $0.flights[key]?.removeValue(forKey: caller) }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Runs the operation in its own task, so that no caller's cancellation reaches it.
    private func start(_ key: Key, _ operation: @Sendable @escaping () async throws -> Value) {
        Task {
            let result: Result<Value, any Error>
            do { result = .success(try await operation()) } catch { result = .failure(error) }
            // The key is free before anyone hears the result: a caller that gets it and asks
            // again starts a fresh run instead of joining a finished one.
            let callers = state.withLock { $0.flights.removeValue(forKey: key) } ?? [:]
            for caller in callers.values { caller.resume(with: result) }
        }
    }

    /// How many operations are running.
    public var running: Int { state.withLock { $0.flights.count } }

    public func isRunning(_ key: Key) -> Bool { state.withLock { $0.flights[key] != nil } }

    /// How many callers wait for `key`'s operation (for tests).
    func callers(of key: Key) -> Int { state.withLock { $0.flights[key]?.count ?? 0 } }
}
