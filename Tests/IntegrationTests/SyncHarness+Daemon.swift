import Foundation
import Glibc
import NimbusSystem
import NimbusTestSupport
import Testing

/// One `nimbusd` of a sync test on `local` and `cloud`, restartable; its log is
/// `home/nimbusd-TAG.log`. Starting, READY=1, stopping and the log are NimbusdProcess's.
final class SyncDaemon: NimbusdProcess {
    let device: String

    /// `tag` names its files: the device, or a shorter word for a device name too long for them.
    init(device: String, tag: String, local: String, cloud: String, stateDirectory: String, home: String) {
        self.device = device
        super.init(name: "nimbusd " + tag, local: local, cloud: cloud, stateDirectory: stateDirectory,
                   socketPath: stateDirectory + "/ctl.sock", logPath: home + "/nimbusd-" + tag + ".log",
                   notifyPath: home + "/notify-" + tag + ".sock")
    }

    /// More options for every launch (`--config FILE`…).
    var extraArguments: [String] = []
    /// A program that runs nimbusd (its path and arguments are appended), such as `setpriv`
    /// to start it as another user with a capability, as a system unit would. Empty: none.
    var launcher: [String] = []
    /// Environment variables set for every launch. By default no session bus: a test daemon
    /// must never show notifications on the desktop of whoever runs the tests.
    var environmentOverrides = ["DBUS_SESSION_BUS_ADDRESS": "disabled:"]

    var arguments: [String] {
        pairArguments + ["--device-name", device, "--log-level", "debug"] + extraArguments
    }

    /// Starts the process without waiting for it to be ready.
    func launch() throws {
        var environment = ProcessInfo.processInfo.environment
        environment["JOURNAL_STREAM"] = nil
        environment["WATCHDOG_USEC"] = nil
        environment.merge(environmentOverrides) { $1 }
        try launch(arguments: arguments, environment: environment, launcher: launcher)
    }

    func start(timeout: Duration = NimbusdProcess.readyDeadline) async throws {
        try launch()
        try await waitUntilReady(timeout: timeout)
    }

    func stop(timeout: Duration = .seconds(5), sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await stopExpectingCleanExit(timeout: timeout, sourceLocation: sourceLocation)
    }

    /// Runs `nimbusctl --socket <this daemon's socket> arguments…`.
    func control(_ arguments: [String]) -> (status: Int32, output: String) {
        SyncHarness.run(SyncHarness.nimbusctl, ["--socket", socketPath] + arguments)
    }

    /// `nimbusctl --json arguments…` as a JSON object (nil when it is not one), with the raw output.
    func controlJSON(_ arguments: [String]) -> (object: [String: Any]?, output: String) {
        let result = control(["--json"] + arguments)
        return ((try? JSONSerialization.jsonObject(with: Data(result.output.utf8))) as? [String: Any], result.output)
    }
}

extension NimbusdProcess {
    /// SIGTERM, then waits for the exit and expects status 0. A daemon that does not exit is
    /// recorded as an issue and killed with SIGKILL, so that the rest of the test still runs.
    func stopExpectingCleanExit(timeout: Duration, sourceLocation: SourceLocation) async throws {
        guard try await end(with: SIGTERM, within: timeout) else {
            Issue.record(Comment(rawValue: "\(failure(stuck ?? "did not exit"))"), sourceLocation: sourceLocation)
            return
        }
        if !exitedCleanly {
            Issue.record("\(failure("SIGTERM ended it with \(exitDescription), expected exit status 0"))", sourceLocation: sourceLocation)
        }
    }
}
