import Foundation
import Glibc
import NimbusSystem

/// One `nimbusd` child process, restartable, the one harness every suite and nimbus-bench
/// start the daemon with. Each launch is a BackgroundProcess (ChildProcess.spawn: no
/// descriptor of the test process leaks into it) whose stdout and stderr are appended in full
/// to `logPath`; its sd_notify messages are read from `notifyPath` when there is one.
/// Failures carry the end of the log.
///
/// Suites subclass it to add their folders, arguments and configuration files. A test uses
/// its daemon from one task at a time.
///
/// Who owns what: one task at a time (the test's) launches, stops and reads it; its `var`s
/// have no lock. The child's status is `BackgroundProcess`'s, behind a `Mutex`, and the
/// sd_notify messages `NotifyListener`'s, so other threads may ask those. `@unchecked
/// Sendable` so that a test may hand it from one task to the next.
open class NimbusdProcess: @unchecked Sendable {
    /// How the daemon is named in failures ("nimbusd alpha").
    public let name: String
    /// The pair it syncs, where it keeps its state and where it serves `nimbusctl`.
    public let local: String
    public let cloud: String
    public let stateDirectory: String
    public let socketPath: String
    public let logPath: String
    /// `$NOTIFY_SOCKET` of every launch; nil: none (the daemon then sends nothing).
    public let notifyPath: String?
    /// When the last launch spawned the process.
    public private(set) var launchedAt: ContinuousClock.Instant?
    public private(set) var launches = 0
    /// The process of the last launch.
    public private(set) var process: BackgroundProcess?
    private var notify: NotifyListener?
    private var readyBaseline = 0
    /// The log's length when the last launch began: what that daemon said comes after it.
    private var launchLogMark = 0

    /// The directory of the running test bundle (or nimbus-bench): `nimbusd` and `nimbusctl`
    /// are built next to it.
    public static let binaryDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
    public static var nimbusd: String { binaryDirectory + "/nimbusd" }
    public static var nimbusctl: String { binaryDirectory + "/nimbusctl" }
    /// The `nimbusd` this harness starts: the one built next to it, unless a subclass names
    /// another (nimbus-bench's `--nimbusd`, to measure the packaged build).
    open var executable: String { Self.nimbusd }

    public init(name: String, local: String, cloud: String, stateDirectory: String, socketPath: String,
                logPath: String, notifyPath: String?) {
        self.name = name
        self.local = local
        self.cloud = cloud
        self.stateDirectory = stateDirectory
        self.socketPath = socketPath
        self.logPath = logPath
        self.notifyPath = notifyPath
    }

    deinit { killIfRunning() }

    // MARK: Starting

    /// `--local … --cloud … --state-dir … --socket …`: the arguments every launch starts with.
    public var pairArguments: [String] {
        ["--local", local, "--cloud", cloud, "--state-dir", stateDirectory, "--socket", socketPath]
    }

    /// Starts `launcher + [nimbusd] + arguments` with `environment` (plus `NOTIFY_SOCKET`) and
    /// returns without waiting. `launcher` is a program that runs nimbusd (`setpriv …`, to run
    /// it as another user). `note` goes into the log after the launch line (a config file).
    public func launch(arguments: [String], environment: [String: String], launcher: [String] = [], note: String = "") throws {
        guard !isRunning else { throw failure("is already running") }
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw HarnessFailure(executable == Self.nimbusd
                ? "nimbusd is not built next to \(CommandLine.arguments[0]) (\(Self.nimbusd)); build the whole package"
                : "\(executable) is not an executable file")
        }
        var environment = environment
        if let notifyPath {
            if notify == nil { notify = try NotifyListener(path: notifyPath) }
            readyBaseline = notify!.readyCount
            environment["NOTIFY_SOCKET"] = notifyPath
            // A daemon started as another user must be allowed to send READY=1.
            if !launcher.isEmpty { chmod(notifyPath, 0o666) }
        }
        launches += 1
        launchLogMark = logMark
        let command = launcher + [executable] + arguments
        try appendToLog("=== launch #\(launches): \(command.joined(separator: " "))\n\(note)")
        launchedAt = ContinuousClock.now
        process = try BackgroundProcess(command[0], Array(command.dropFirst()), environment: environment, outputPath: logPath)
    }

    private func appendToLog(_ text: String) throws {
        let fd = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw HarnessFailure("cannot open the log \(logPath): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// Whether `READY=1` arrived since the last launch (without waiting).
    public func receivedReady() -> Bool { (notify?.readyCount ?? 0) > readyBaseline }

    /// The last sd_notify messages received (READY, STATUS, STOPPING…), for diagnostics.
    public var notifications: [String] { notify?.recent ?? [] }

    /// Waits for `READY=1` on the notification socket; fails if the process exits first. The
    /// deadline is generous: a start after kill -9 recovers first, and a loaded machine was
    /// seen to take more than 30 s (the wait ends as soon as READY=1 comes).
    public static let readyDeadline: Duration = .seconds(120)

    public func waitUntilReady(timeout: Duration = NimbusdProcess.readyDeadline) async throws {
        let deadline = ContinuousClock.now + timeout
        while !receivedReady() {
            guard isRunning else { throw failure("exited before it was ready (\(exitDescription))") }
            if ContinuousClock.now >= deadline { throw failure("did not send READY=1 within \(timeout)") }
            try await Task.sleep(for: .milliseconds(5))
        }
        try await waitUntilWatching(timeout: ContinuousClock.now.duration(to: deadline))
    }

    /// The folders ("local", "cloud") that the daemon of the last launch could not watch for
    /// lack of inotify instances (EMFILE) and does not watch again yet.
    public func foldersWaitingForInotify() -> [String] {
        ["local", "cloud"].filter { side in
            logLines(containing: "cannot watch the \(side) folder", since: launchLogMark).contains { $0.contains("Too many open files") }
                && logLines(containing: "watching the \(side) folder again", since: launchLogMark).isEmpty
        }
    }

    /// Waits until the daemon of the last launch watches the folders it could not watch for
    /// lack of inotify instances. The limit (128 per user by default) is shared by the dozens
    /// of daemons of a parallel `swift test` and whatever else the user runs; a daemon that
    /// found none free polls its folders and watches them again within seconds of their
    /// release. Tests expect what watching gives (a change seen at once, an open of a
    /// placeholder told), so ready means watching. A folder unwatched for another reason is
    /// the test's own business and is not waited for.
    public func waitUntilWatching(timeout: Duration) async throws {
        try await eventually("the daemon to watch its folders again once inotify instances are free", timeout: max(timeout, .seconds(1)),
                             interval: .milliseconds(50)) {
            guard isRunning else { return nil }  // its exit is what the test sees next
            let waiting = foldersWaitingForInotify()
            return waiting.isEmpty ? nil : "still unwatched: \(waiting.joined(separator: ", "))"
        }
    }

    /// The same, blocking this thread (for nimbus-bench); returns the time from the spawn to
    /// the arrival of READY=1.
    @discardableResult
    public func waitUntilReadyBlocking(timeout: Duration) throws -> Duration {
        guard let notify, let launchedAt else { throw failure("was not launched with a notification socket") }
        let deadline = launchedAt + timeout
        while !notify.waitForReady(moreThan: readyBaseline, until: min(deadline, ContinuousClock.now + .milliseconds(200))) {
            guard isRunning else { throw failure("exited before it was ready (\(exitDescription))") }
            if ContinuousClock.now >= deadline { throw failure("did not send READY=1 within \(timeout)") }
        }
        return launchedAt.duration(to: notify.lastReadyAt ?? ContinuousClock.now)
    }

    // MARK: Running and ending

    public var pid: Int32? { process?.pid }
    public var isRunning: Bool { process?.isRunning ?? false }

    /// The status a shell gives (the exit code, or 128 + N for signal N); nil while it runs
    /// or before it started.
    public var exitStatus: Int32? { process.flatMap { $0.isRunning ? nil : $0.status } }

    /// Whether it ended with exit status 0.
    public var exitedCleanly: Bool { exitStatus == 0 }

    /// "exit status N", "signal N (SIGKILL)", "still running" or "never started".
    public var exitDescription: String { process?.exitDescription ?? "never started" }

    /// Sends `signal` if it runs.
    public func send(_ signal: Int32) {
        if let pid, isRunning { kill(pid, signal) }
    }

    /// SIGSTOP: every thread of the daemon stands still where it is (a fill half done), so
    /// that a kill -9 after it lands there however fast the disk is.
    public func freeze() { send(SIGSTOP) }

    /// Whether it has exited within `timeout` (polled: a stopped child has not exited).
    public func waitForExit(timeout: Duration) async throws -> Bool {
        try await process?.exited(within: timeout) ?? true
    }

    /// The same, blocking this thread.
    public func waitForExitBlocking(timeout: Duration) -> Bool {
        process?.exitedBlocking(within: timeout) ?? true
    }

    /// `signal` (SIGTERM: a clean stop), then waits up to `timeout` for the end. True when it
    /// ended so; false when it did not (it is then killed with SIGKILL and waited for, and
    /// `stuck` says where its threads waited). Throws when it was not running.
    public func end(with signal: Int32 = SIGTERM, within timeout: Duration) async throws -> Bool {
        guard let pid, isRunning else { throw failure("was not running at signal \(signal) (\(exitDescription))") }
        kill(pid, signal)
        if try await waitForExit(timeout: timeout) { return true }
        stuck = "did not exit within \(timeout) of signal \(signal); killed with SIGKILL instead\n\(threadStates())"
        killIfRunning()
        return false
    }

    /// The same, blocking this thread (for nimbus-bench and synchronous tests).
    @discardableResult
    public func endBlocking(with signal: Int32 = SIGTERM, within timeout: Duration) -> Bool {
        guard let pid, isRunning else { return true }
        kill(pid, signal)
        if waitForExitBlocking(timeout: timeout) { return true }
        stuck = "did not exit within \(timeout) of signal \(signal); killed with SIGKILL instead\n\(threadStates())"
        killIfRunning()
        return false
    }

    /// What the last `end` that had to kill found (the threads' wait channels).
    public private(set) var stuck: String?

    /// kill -9, and waits until it is gone.
    public func crash() async throws {
        guard let pid, isRunning else { throw failure("was not running at kill -9 (\(exitDescription))") }
        kill(pid, SIGKILL)
        guard try await waitForExit(timeout: .seconds(10)) else { throw failure("still running 10 s after SIGKILL") }
    }

    /// SIGKILL if it still runs, and waits for it; stops reading its notifications. The
    /// cleanup at the end of a test (also from a defer).
    public func killIfRunning() {
        process?.stop()
        notify?.stop()
        notify = nil
    }

    // MARK: Log and failures

    // The log's reading and `/proc` are in NimbusdProcess+Log.swift and NimbusdProcess+Proc.swift;
    // what a subclass may change, or what needs storage, stays here.

    /// How long `waitForLog` waits unless told.
    public var logWaitTimeout = Duration.seconds(15)

    /// A failure naming this daemon, with the end of its log.
    open func failure(_ message: String) -> HarnessFailure {
        HarnessFailure("\(name): \(message)\n\(logTail(lines: 80))")
    }
}
