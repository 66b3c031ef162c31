import Foundation
import Glibc
import NimbusSystem
import Testing

/// One `nimbusd` child process, restartable; its stderr is appended to `logPath`.
final class SyncDaemon {
    let device: String
    let local: String
    let cloud: String
    let stateDirectory: String
    let socketPath: String
    let logPath: String
    let notifyPath: String
    private var process: Process?
    private var notify: SyncNotifyListener?
    private var readyBaseline = 0
    private(set) var launches = 0

    init(device: String, local: String, cloud: String, stateDirectory: String, home: String) {
        self.device = device
        self.local = local
        self.cloud = cloud
        self.stateDirectory = stateDirectory
        socketPath = stateDirectory + "/ctl.sock"
        logPath = home + "/nimbusd-" + device + ".log"
        notifyPath = home + "/notify-" + device + ".sock"
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
        ["--local", local, "--cloud", cloud, "--state-dir", stateDirectory, "--socket", socketPath,
         "--device-name", device, "--log-level", "debug"] + extraArguments
    }

    var isRunning: Bool { process?.isRunning ?? false }
    var pid: Int32? { process?.processIdentifier }

    /// CPU time (user + system) the daemon has used so far, from /proc/PID/stat.
    func cpuSeconds() throws -> Double {
        let pid = try #require(pid)
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // The fields after the command name, which is in parentheses and may hold spaces.
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        let ticks = Double(fields[11])! + Double(fields[12])!  // utime, stime (fields 14 and 15)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Starts the process without waiting for it to be ready.
    func launch() throws {
        guard !isRunning else { throw SyncFailure(description: "\(device) is already running") }
        if notify == nil { notify = try SyncNotifyListener(path: notifyPath) }
        readyBaseline = notify!.readyCount
        launches += 1
        let fd = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SyncFailure(description: "cannot open \(logPath): errno \(errno)") }
        let log = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        log.write(Data("=== launch #\(launches): nimbusd \(arguments.joined(separator: " "))\n".utf8))
        let process = Process()
        if let program = launcher.first {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = launcher.dropFirst() + [SyncHarness.nimbusd] + arguments
            // A daemon started as another user must be allowed to send READY=1.
            chmod(notifyPath, 0o666)
        } else {
            process.executableURL = URL(fileURLWithPath: SyncHarness.nimbusd)
            process.arguments = arguments
        }
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notifyPath
        environment["JOURNAL_STREAM"] = nil
        environment["WATCHDOG_USEC"] = nil
        environment.merge(environmentOverrides) { $1 }
        process.environment = environment
        process.standardError = log
        process.standardOutput = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process
    }

    /// Waits for `READY=1` on the notification socket; fails if the process exits first.
    func waitUntilReady(timeout: Duration = .seconds(30)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if receivedReady() { return }
            guard isRunning else {
                throw failure("exited before it was ready (\(exitDescription))")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw failure("did not send READY=1 within \(timeout)")
    }

    /// Whether `READY=1` arrived since the last launch (without waiting).
    func receivedReady() -> Bool { (notify?.readyCount ?? 0) > readyBaseline }

    /// The last notifications received (READY, STATUS, STOPPING…), for diagnostics.
    var notifications: [String] { notify?.recent ?? [] }

    func start(timeout: Duration = .seconds(30)) async throws {
        try launch()
        try await waitUntilReady(timeout: timeout)
    }

    /// SIGTERM, then waits for the exit and expects status 0. A daemon that does not exit is
    /// recorded as an issue and killed with SIGKILL, so that the rest of the test still runs.
    func stop(timeout: Duration = .seconds(5), sourceLocation: SourceLocation = #_sourceLocation) async throws {
        guard let process, process.isRunning else { throw failure("was not running at stop (\(exitDescription))") }
        kill(process.processIdentifier, SIGTERM)
        do {
            try await waitForExit(timeout: timeout)
        } catch {
            let message = "nimbusd \(device) did not exit within \(timeout) of SIGTERM; killed with SIGKILL instead\n"
                + "\(threadStates(process.processIdentifier))\n\(error)"
            Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
            kill(process.processIdentifier, SIGKILL)
            try await waitForExit(timeout: .seconds(10))
            return
        }
        if process.terminationReason != .exit || process.terminationStatus != 0 {
            Issue.record("\(failure("SIGTERM ended it with \(exitDescription), expected exit status 0"))", sourceLocation: sourceLocation)
        }
    }

    /// Where each thread of `pid` waits (name, kernel wait channel, syscall number).
    func threadStates(_ pid: Int32) -> String {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return "threads of the hung daemon (name, wait channel, syscall):\n" + tasks.sorted().map { tid in
            let read = { (file: String) in
                ((try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/\(file)", encoding: .utf8)) ?? "?")
                    .split(separator: "\n").first.map(String.init) ?? ""
            }
            return "  \(tid) \(read("comm")) \(read("wchan")) \(read("syscall").split(separator: " ").first ?? "")"
        }.joined(separator: "\n")
    }

    /// kill -9, and waits until it is gone.
    func crash() async throws {
        guard let process, process.isRunning else { throw failure("was not running at kill -9 (\(exitDescription))") }
        kill(process.processIdentifier, SIGKILL)
        try await waitForExit(timeout: .seconds(10))
    }

    func waitForExit(timeout: Duration) async throws {
        guard try await process?.exited(within: timeout) ?? true else { throw failure("did not exit within \(timeout)") }
    }

    /// At the end of a test: kills the process if it still runs, stops the listener.
    func killIfRunning() {
        process?.killAndWait()
        notify?.stop()
    }

    var exitDescription: String { process?.exitDescription ?? "never started" }

    // MARK: Log

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    /// The log's current length: pass it to `waitForLog(_:since:)` to see only later lines.
    var logMark: Int { log.utf8.count }

    func logTail(lines: Int) -> String { log.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n") }

    /// The log lines after `mark` that contain `text`.
    func logLines(containing text: String, since mark: Int = 0) -> [String] {
        let bytes = Array(log.utf8)
        guard mark < bytes.count else { return [] }
        return String(decoding: bytes[mark...], as: UTF8.self).split(separator: "\n").filter { $0.contains(text) }.map(String.init)
    }

    /// Polls the log until a line after `mark` contains `text`; returns that line.
    @discardableResult
    func waitForLog(_ text: String, since mark: Int = 0, timeout: Duration = .seconds(15)) async throws -> String {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            if let line = logLines(containing: text, since: mark).first { return line }
            if clock.now >= deadline { throw failure("no log line containing \"\(text)\" within \(timeout)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func failure(_ message: String) -> SyncFailure {
        SyncFailure(description: "nimbusd \(device): \(message)\n--- log (\(logPath)), last 80 lines:\n\(logTail(lines: 80))")
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

/// The `$NOTIFY_SOCKET` of a daemon, read all the time from a background thread as systemd
/// does: the daemon's `sendto` blocks once the socket's queue is full.
final class SyncNotifyListener: @unchecked Sendable {
    private let socket: UnixDatagramSocket
    private let lock = NSLock()
    private var ready = 0
    private var messages: [String] = []
    private var stopping = false

    init(path: String) throws {
        unlink(path)
        socket = try UnixDatagramSocket.bound(to: path)
        let thread = Thread { [self] in
            while !lock.withLock({ stopping }) {
                guard let message = try? socket.receive(timeoutMilliseconds: 100) else { continue }
                let text = String(decoding: message, as: UTF8.self)
                lock.withLock {
                    if text.split(separator: "\n").contains("READY=1") { ready += 1 }
                    messages.append(text.replacingOccurrences(of: "\n", with: " "))
                    if messages.count > 50 { messages.removeFirst() }
                }
            }
            socket.close()
        }
        thread.name = "sync-notify-listener"
        thread.start()
    }

    /// How many READY=1 arrived so far.
    var readyCount: Int { lock.withLock { ready } }
    var recent: [String] { lock.withLock { messages } }
    func stop() { lock.withLock { stopping = true } }
}
