import Foundation
import Glibc

/// What every harness that runs nimbusd or nimbusctl needs of a child process.
extension Process {
    /// "exit status N", "signal N" or "still running", for failure messages.
    var exitDescription: String {
        if isRunning { return "still running" }
        return terminationReason == .exit ? "exit status \(terminationStatus)" : "signal \(terminationStatus)"
    }

    /// The status a shell gives: the exit code, or 128 + N for signal N.
    var shellStatus: Int32 { terminationReason == .uncaughtSignal ? 128 + terminationStatus : terminationStatus }

    /// Whether it has exited within `timeout` (polled; the child may be stopped by a signal).
    func exited(within timeout: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            if ContinuousClock.now >= deadline { return false }
            try await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// SIGKILL if it still runs, and waits for it: the cleanup at the end of a test.
    func killAndWait() {
        guard isRunning else { return }
        kill(processIdentifier, SIGKILL)
        waitUntilExit()
    }
}
