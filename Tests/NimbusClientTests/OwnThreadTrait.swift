import NimbusTestSupport
import Testing

/// `@Suite(.onAThreadOfItsOwn)`: each test of the suite runs on an `OwnThreadExecutor`, so
/// that its awaits resume at once instead of behind every test still queued for the shared
/// pool (see OwnThreadExecutor for the measurement). For async tests whose deadlines measure
/// their own work: a client answered in milliseconds, not the load of the machine.
struct OnAThreadOfItsOwn: SuiteTrait, TestTrait, TestScoping {
    /// Reaches every test of the suite, each taken on its own.
    var isRecursive: Bool { true }

    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await OwnThreadExecutor.run { try await function() }
    }
}

extension Trait where Self == OnAThreadOfItsOwn {
    static var onAThreadOfItsOwn: Self { Self() }
}
