import Foundation
import Glibc
import NimbusTestSupport
import Testing

// The harness of the nimbusctl integration tests: a real `nimbusd` on temporary folders, and
// `nimbusctl` run as a process with its stdout, stderr and exit status kept apart. Every wait
// polls a condition until a deadline. Names start with `Ctl` so that they never collide with
// the other harnesses of this test target.

/// What one nimbusctl run printed and how it ended.
struct CtlResult: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String

    var description: String { "exit \(status)\n--- stdout:\n\(stdout)--- stderr:\n\(stderr)" }

    /// stdout read as one JSON document.
    func json() throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any] else {
            throw HarnessFailure("stdout is not a JSON object: \(self)")
        }
        return object
    }
}

enum CtlHarness {
    /// Runs `executable` to the end with stdout and stderr in files (pipes could fill up and
    /// block the child while the parent waits on the other one). Started as every child of the
    /// tests is (`BackgroundProcess`: ChildProcess.spawn, no descriptor inherited), not with
    /// Foundation's `Process`. A run that lasts more than `timeout` is killed and fails naming
    /// the command, rather than holding its test until the suite's time limit (helpForEveryCommand
    /// hit that limit once in a loaded full run, saying nothing of where it waited).
    static func run(_ executable: String, _ arguments: [String], environment: [String: String],
                    currentDirectory: String, scratch: String, timeout: Duration = .seconds(60)) throws -> CtlResult {
        let process = try BackgroundProcess(executable, arguments, environment: environment, currentDirectory: currentDirectory,
                                            scratch: scratch, separateErrors: true)
        defer {
            try? FileManager.default.removeItem(atPath: process.outputPath)
            try? FileManager.default.removeItem(atPath: process.errorPath)
        }
        guard process.exitedBlocking(within: timeout) else {
            process.stop()
            throw HarnessFailure("\(([executable] + arguments).joined(separator: " ")) still ran after \(timeout) (killed): "
                                 + "\(process.output)\(process.errors)")
        }
        return CtlResult(status: process.status, stdout: process.output, stderr: process.errors)
    }
}

/// One `nimbusd` with its own local, cloud and state folders and socket, at the default log
/// level and without a notification socket: ready when `nimbusctl status` answers. Each test
/// uses its own from one task at a time. Always `stop()` it.
/// Who owns what: as `NimbusdProcess`; `extraArguments` is set before a launch, by the test.
final class CtlDaemon: NimbusdProcess, @unchecked Sendable {
    let root: String
    var socket: String { socketPath }
    /// Added to every launch's arguments (`--log-level debug`).
    var extraArguments: [String] = []

    init() throws {
        let root = try TemporaryDirectory.make("nimbus-ctl")
        self.root = root
        super.init(name: "nimbusd", local: root + "/local", cloud: root + "/cloud", stateDirectory: root + "/state",
                   socketPath: root + "/d.sock", logPath: root + "/nimbusd.log", notifyPath: nil)
        for folder in [local, cloud, stateDirectory, root + "/config/nimbus"] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        // These tests were written for suffix placeholders (NAME.nimbus), which every machine
        // can have; real-name ones have tests of their own (RealNamePlaceholderDaemonTests).
        try "[placeholders]\nstyle = suffix\n".write(toFile: root + "/config/nimbus/default.conf", atomically: true, encoding: .utf8)
    }

    /// The environment both programs get: a home and config folder of their own, no colour
    /// preference from the outside.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = root
        environment["XDG_CONFIG_HOME"] = root + "/config"
        environment["XDG_RUNTIME_DIR"] = root
        environment.removeValue(forKey: "NO_COLOR")
        environment.removeValue(forKey: "NOTIFY_SOCKET")
        environment.removeValue(forKey: "DBUS_SESSION_BUS_ADDRESS")  // no notifications on the tester's desktop
        return environment
    }

    /// Runs `body` with a started daemon, and stops it (and removes its folders) whatever
    /// happens: an async stop cannot live in a defer. A failure carries the end of the log and
    /// names where the whole log is kept. `arguments` go to nimbusd (`--log-level debug`).
    static func with(arguments: [String] = [], _ body: (CtlDaemon) async throws -> Void) async throws {
        let daemon = try CtlDaemon()
        daemon.extraArguments = arguments
        do {
            try await daemon.start()
            try await body(daemon)
        } catch {
            let kept = TemporaryDirectory.keepCopies(of: [daemon.logPath], label: "nimbusctl test")
            let failure = HarnessFailure("\(error)\n\(daemon.logTail())\n\(kept)")
            await daemon.stop()
            throw failure
        }
        await daemon.stop()
    }

    /// Starts the daemon and waits until `nimbusctl status` gets an answer: the event itself,
    /// with a deadline generous enough for a loaded machine (15 s was seen to pass while a
    /// full `swift test` ran; the wait ends as soon as the answer comes).
    func start() async throws {
        try launch(arguments: pairArguments + ["--device-name", "test"] + extraArguments, environment: environment)
        try await Polling.eventually("nimbusd to answer status\n\(logTail())", timeout: .seconds(90)) {
            guard isRunning else { return "nimbusd ended with \(exitDescription)" }
            let result = try await ctl(["status"])
            return result.status == 0 ? nil : "\(result)"
        }
        try await waitUntilWatching(timeout: .seconds(90))
    }

    /// Runs `nimbusctl --socket SOCKET arguments…` from `directory` (default the sandbox).
    func ctl(_ arguments: [String], in directory: String? = nil, environment extra: [String: String] = [:]) async throws -> CtlResult {
        let (arguments, environment, directory, scratch) = (["--socket", socket] + arguments, environment.merging(extra) { $1 },
                                                            directory ?? root, root)
        return try await Polling.blocking {
            try CtlHarness.run(NimbusdProcess.nimbusctl, arguments, environment: environment, currentDirectory: directory, scratch: scratch)
        }
    }

    /// `signal` (SIGTERM: a clean stop), a wait with a deadline, SIGKILL if it is stuck.
    /// The folders stay.
    func terminate(signal: Int32 = SIGTERM) async {
        guard isRunning, let ended = try? await end(with: signal, within: .seconds(10)), !ended else { return }
        print("nimbusd did not stop within 10 s of signal \(signal); killed\n\(stuck ?? "")")
    }

    /// Terminates the daemon, then the folders go.
    func stop() async {
        await terminate()
        TemporaryDirectory.remove(root, label: "nimbusctl test")
    }

    /// `nimbusctl --socket SOCKET arguments…` left running (`watch`, `lock -- COMMAND`), from
    /// the sandbox, its output in a file there.
    func background(_ arguments: [String], separateErrors: Bool = false) throws -> BackgroundProcess {
        try BackgroundProcess(NimbusdProcess.nimbusctl, ["--socket", socket] + arguments, environment: environment,
                              currentDirectory: root, scratch: root, separateErrors: separateErrors)
    }

    func write(_ relative: String, _ text: String, side: String = "local") throws {
        let path = (side == "local" ? local : cloud) + "/" + relative
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    }

    func read(_ relative: String, side: String = "local") -> String? {
        try? String(contentsOfFile: (side == "local" ? local : cloud) + "/" + relative, encoding: .utf8)
    }

    /// Waits until the cloud holds `text` at `relative` (the daemon synced it).
    func waitForCloud(_ relative: String, _ text: String) async throws {
        try await Polling.eventually("\(relative) to reach the cloud") {
            read(relative, side: "cloud") == text ? nil : "cloud has \(read(relative, side: "cloud") ?? "nothing")"
        }
    }
}
