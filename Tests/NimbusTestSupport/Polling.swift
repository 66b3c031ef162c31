import Foundation
import Glibc

/// Waiting for a condition: every wait polls until a deadline, never a sleep standing in for
/// an event. `check` closures return nil when satisfied, else what is still missing, which
/// the failure reports.
public enum Polling {
    /// Polls `check` every `interval` until it returns nil, or throws once `timeout` has
    /// passed with the last thing it said (or threw).
    public static func eventually(_ what: String, timeout: Duration = .seconds(15), interval: Duration = .milliseconds(20),
                                  _ check: () async throws -> String?) async throws {
        let deadline = ContinuousClock.now + timeout
        var last = "not checked"
        while true {
            do {
                guard let missing = try await check() else { return }
                last = missing
            } catch {
                last = "\(error)"
            }
            if ContinuousClock.now >= deadline { break }
            try await Task.sleep(for: interval)
        }
        throw HarnessFailure("timed out after \(timeout) waiting for \(what); last: \(last)")
    }

    /// Polls `condition` until it holds, or throws once `timeout` has passed.
    public static func until(_ what: String, timeout: Duration = .seconds(15), interval: Duration = .milliseconds(20),
                             _ condition: () async throws -> Bool) async throws {
        try await eventually(what, timeout: timeout, interval: interval) { try await condition() ? nil : "not yet" }
    }

    /// Polls `condition` in synchronous code: blocks this thread between polls (not for async tests,
    /// whose pool threads the awaited work may need).
    public static func wait(_ what: String, timeout: Duration = .seconds(20), interval: Duration = .milliseconds(20),
                            _ condition: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            if try condition() { return }
            if ContinuousClock.now >= deadline { throw HarnessFailure("timed out after \(timeout) waiting for \(what)") }
            Thread.sleep(forTimeInterval: interval.seconds)
        }
    }

    /// Polls `condition` on this thread every `interval` (100 µs) for up to `timeout`, without
    /// waiting for a task to be scheduled again between polls (which takes milliseconds on a
    /// busy machine, and seconds while other suites keep the pool busy): for catching something
    /// short-lived under way. True when it held in time.
    public static func spin(timeout: Duration, interval: Duration = .microseconds(100), until condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return true }
            usleep(UInt32(interval.seconds * 1e6))
        }
        return condition()
    }

    /// Runs blocking work (waiting for a process) on a thread of its own: Swift concurrency
    /// has one thread per core, and tests running in parallel would starve each other (and
    /// their deadlines) if the waits blocked those.
    public static func blocking<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }
}

extension Duration {
    /// The duration in seconds, for APIs that take a `TimeInterval`.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
