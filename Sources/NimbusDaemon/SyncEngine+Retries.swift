import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// Paths looked at again later: after an error (backing off), or a second after a leased one
/// was passed over. (A lease that ends makes its paths due at once through the runtime:
/// `PairRuntime.syncSoon`.)
extension SyncEngine {
    func scheduleRetry(_ path: RelativePath, error: String, delay fixedDelay: Duration? = nil) {
        state.withLock { s in
            let attempt = s.retryCount[path, default: 0] + 1
            s.retryCount[path] = attempt
            s.retries[path] = clock.monotonicNow + (fixedDelay ?? Self.retryDelay(attempt: attempt))
        }
    }

    /// The pause before try number `attempt` + 1: 1 s, 2 s, 4 s … up to 5 minutes.
    static func retryDelay(attempt: Int) -> Duration { .seconds(min(300, 1 << min(attempt - 1, 9))) }

    /// A failed path now on neither side and not journaled (a cloud file that could not come
    /// here, `PlaceholderNameTooLong`, renamed or deleted there since): nothing is left to
    /// fail, so status stops counting it and nothing retries it. Otherwise no pass would plan
    /// anything for it, and its error would stay until a restart. A path inside a folder the
    /// pass could not read is not in the views either, but may well be there: it stays.
    func forgetFailuresOfVanishedPaths(in scope: [RelativePath], _ views: Views) {
        let vanished = state.withLock { s in
            s.transient.filter { path, state in
                state.message != nil && s.index[path] == nil && views.local[path] == nil && views.cloud[path] == nil
                    && scope.contains { $0.contains(path) } && !views.unreadable.contains { $0.contains(path) }
            }.keys
        }
        for path in vanished {
            clearTransient(path)
            state.withLock { s in
                s.retries[path] = nil
                s.retryCount[path] = nil
            }
        }
    }

    /// When the next retry (of a path, or of a held commit) is due, if any.
    public var nextRetry: MonotonicInstant? {
        state.withLock { s in [s.retries.values.min(), s.heldCommit?.due].compactMap { $0 }.min() }
    }

    /// Paths whose retry is due now; they are removed from the schedule.
    public func dueRetries() -> Set<RelativePath> {
        let now = clock.monotonicNow
        return state.withLock { s in
            let due = s.retries.filter { $0.value <= now }.map(\.key)
            for path in due { s.retries[path] = nil }
            return Set(due)
        }
    }
}
