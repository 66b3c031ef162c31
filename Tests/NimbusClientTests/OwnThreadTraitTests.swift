import Foundation
import NimbusTestSupport
import NimbusTestTraits
import Testing

/// The trait really moves a test, its child tasks and its resumptions off the shared pool.
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(1)))
struct OwnThreadTraitTests {
    @Test func theTestItsChildTasksAndItsResumptionsRunOnTheTestsThread() async throws {
        let name = currentThreadName()
        #expect(name.hasPrefix("own thread "), "the test ran on \(name)")
        async let child = currentThreadName()
        #expect(await child == name)
        try await Task.sleep(for: .milliseconds(1))
        #expect(currentThreadName() == name, "resumed after a sleep")
    }

    @Test func testsRunningAtOnceHaveAThreadEach() async throws {
        let first = try await OwnThreadExecutor.run { currentThreadName() }
        let nested = try await OwnThreadExecutor.run { currentThreadName() }
        #expect(first == nested, "an executor is taken back once its test is done")
        #expect(first != currentThreadName(), "while a test runs on one, another gets its own")
    }

    @Test func aTestOverItsLimitIsCancelled() async throws {
        #expect(try await OwnThreadExecutor.run(limitedTo: .milliseconds(50)) { try await Task.sleep(for: .seconds(60)) } == false)
        #expect(try await OwnThreadExecutor.run(limitedTo: .seconds(60)) {})
    }
}

/// The kernel's name of the calling thread (Foundation's `Thread.current` is not for async code).
private func currentThreadName() -> String {
    let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "unknown"
    return name.trimmingCharacters(in: .newlines)
}
