import NimbusTestSupport
import Testing

/// `@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(1)))`: each test of the suite runs on an
/// `OwnThreadExecutor`, so that its awaits resume at once instead of behind every test still
/// queued for the shared pool (see OwnThreadExecutor for the measurement), and its time limit
/// is timed there too. For async tests whose polls and limits should measure their own work
/// (a client answered in milliseconds, a daemon's sync), not the load of the machine. The
/// test must not block its thread on work its own child tasks do (they share it); unstructured
/// tasks (`Task {}`) still run on the pool. Swift Testing's `.timeLimit` is no
/// use to them: its timer and the runner that cancels it wait for the pool, and a test that
/// did nothing for a minute (a synchronous one of two lines) exceeded it under load.
public struct OnAThreadOfItsOwn: SuiteTrait, TestTrait, TestScoping {
    public var timeLimit: Duration

    /// Reaches every test of the suite, each taken on its own.
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let finished = try await withoutActuallyEscaping(function) { function in
            try await OwnThreadExecutor.run(limitedTo: timeLimit, function)
        }
        if !finished { Issue.record("Time limit was exceeded: \(timeLimit) on the test's own thread") }
    }
}

extension Trait where Self == OnAThreadOfItsOwn {
    public static func onAThreadOfItsOwn(timeLimit: Duration) -> Self { Self(timeLimit: timeLimit) }
}
