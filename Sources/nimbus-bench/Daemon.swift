import Dispatch
import Foundation
import NimbusSystem

/// The real release `nimbusd`, started on a pair of folders as systemd would start it: its
/// readiness comes over `NOTIFY_SOCKET` (READY=1 is sent after the first full sync).
final class Daemon {
    let local: String
    let cloud: String
    let stateDirectory: String
    let logPath: String
    /// Monotonic ns just before the spawn.
    let startedAt: Int64
    var readyAt: Int64? { notifications.readyAt }
    private let process: Process
    private let notifications: NotificationListener
    private let exited = DispatchSemaphore(value: 0)
    private var exitStatus: Int32?

    /// `nimbusd` next to this program (both are products of the same build).
    static var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("nimbusd").path
    }

    static var clockTicksPerSecond: Double { Double(sysconf(Int32(_SC_CLK_TCK))) }

    /// Starts `nimbusd --local local --cloud cloud --state-dir state …`; returns at once.
    init(local: String, cloud: String, stateDirectory: String, logPath: String, extraArguments: [String] = []) throws {
        self.local = local
        self.cloud = cloud
        self.stateDirectory = stateDirectory
        self.logPath = logPath
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw BenchError("no nimbusd next to nimbus-bench (\(Self.binary)); build the whole package")
        }
        try makeDirectories(SystemPath(stateDirectory), permissions: 0o700)
        let socketName = "@nimbus-bench-\(ProcessInfo.processInfo.processIdentifier)-\(UInt64.random(in: 0 ... .max))"
        notifications = NotificationListener(socket: try UnixDatagramSocket.bound(to: socketName))
        guard FileManager.default.createFile(atPath: logPath, contents: nil),
              let log = FileHandle(forWritingAtPath: logPath) else {
            notifications.close()
            throw BenchError("cannot create the daemon log \(logPath)")
        }
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["--local", local, "--cloud", cloud, "--state-dir", stateDirectory,
                             "--socket", stateDirectory + "/ctl.sock", "--device-name", "bench",
                             "--log-level", "warning"] + extraArguments
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = socketName
        for name in ["WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM", "LISTEN_FDS"] { environment[name] = nil }
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = log
        process.standardError = log
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        startedAt = Monotonic.now
        do {
            try process.run()
        } catch {
            notifications.close()
            throw BenchError("cannot start \(Self.binary): \(error)")
        }
        notifications.start()
        try? log.close()
        Cleanup.shared.started(process.processIdentifier)
    }

    deinit {
        if exitStatus == nil { _ = stop() }
        notifications.close()
    }

    var pid: Int32 { process.processIdentifier }

    /// Waits for READY=1; returns the seconds since the spawn. Throws when the daemon exits
    /// first or `timeout` passes.
    @discardableResult
    func waitReady(timeout: Double) throws -> Double {
        let deadline = startedAt + Int64(timeout * 1e9)
        while notifications.readyAt == nil {
            if Monotonic.now >= deadline { throw BenchError("nimbusd sent no READY=1 within \(format(timeout)) s; log: \(logTail())") }
            if !notifications.waitReady(milliseconds: 200) && !process.isRunning && notifications.readyAt == nil {
                throw BenchError("nimbusd \(exitDescription) before READY=1 (after \(format(Monotonic.seconds(since: startedAt))) s); log: \(logSummary())")
            }
        }
        return Double(notifications.readyAt! - startedAt) / 1e9
    }

    var isRunning: Bool { process.isRunning }

    /// SIGTERM, then SIGKILL after `timeout` seconds. Returns the exit status.
    @discardableResult
    func stop(timeout: Double = 30) -> Int32 {
        if let exitStatus { return exitStatus }
        if process.isRunning { process.terminate() }
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            progress("nimbusd \(pid) did not stop within \(format(timeout)) s of SIGTERM; killing it")
            kill(pid, SIGKILL)
            exited.wait()
        }
        exitStatus = process.terminationStatus
        Cleanup.shared.stopped(pid)
        return exitStatus!
    }

    // MARK: - What /proc says about it

    /// utime + stime of all its threads, dead or alive, in seconds (clock-tick resolution).
    func cpuSeconds() -> Double? {
        guard let text = read("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
        // After "pid (comm) ": state is field 3; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Self.clockTicksPerSecond
    }

    /// Nanoseconds on CPU of the threads alive now (schedstat): finer than `cpuSeconds`, but
    /// blind to threads that have exited.
    func liveThreadsCPUNanoseconds() -> Int64? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        guard !tasks.isEmpty else { return nil }
        return tasks.reduce(Int64(0)) { sum, task in
            sum + (read("/proc/\(pid)/task/\(task)/schedstat")?.split(separator: " ").first.flatMap { Int64($0) } ?? 0)
        }
    }

    /// Voluntary plus involuntary context switches of the live threads: how often it woke up.
    func contextSwitches() -> Int? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        guard !tasks.isEmpty else { return nil }
        return tasks.reduce(0) { sum, task in
            sum + (status("/proc/\(pid)/task/\(task)/status", "voluntary_ctxt_switches") ?? 0)
                + (status("/proc/\(pid)/task/\(task)/status", "nonvoluntary_ctxt_switches") ?? 0)
        }
    }

    /// Resident memory now and its peak, in KiB.
    func memory() -> (rss: Int, peak: Int)? {
        guard let rss = status("/proc/\(pid)/status", "VmRSS"), let peak = status("/proc/\(pid)/status", "VmHWM") else { return nil }
        return (rss, peak)
    }

    /// Bytes it asked to write (`wchar`) and bytes sent to the disk (`write_bytes`).
    func io() -> (wchar: Int, writeBytes: Int)? {
        guard let text = read("/proc/\(pid)/io") else { return nil }
        var values: [Substring: Int] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":")
            if parts.count == 2 { values[parts[0]] = Int(parts[1].trimmingCharacters(in: .whitespaces)) }
        }
        guard let wchar = values["wchar"], let writeBytes = values["write_bytes"] else { return nil }
        return (wchar, writeBytes)
    }

    /// Waits until its CPU time has not moved for `quiet` seconds (it finished what it was
    /// doing); returns the seconds waited. Gives up after `timeout`.
    @discardableResult
    func waitUntilIdle(quiet: Double = 1.0, timeout: Double = 120) -> Double {
        let start = Monotonic.now
        var last = liveThreadsCPUNanoseconds()
        var stableSince = Monotonic.now
        while Monotonic.seconds(since: start) < timeout {
            Monotonic.sleep(seconds: 0.1)
            let now = liveThreadsCPUNanoseconds()
            // Less than 1 ms of CPU in 100 ms counts as idle.
            if let now, let before = last, now - before < 1_000_000 {
                if Monotonic.seconds(since: stableSince) >= quiet { break }
            } else {
                stableSince = Monotonic.now
            }
            last = now
        }
        return Monotonic.seconds(since: start)
    }

    /// "exited with status N" or "was killed by signal N (SIGSEGV)".
    var exitDescription: String {
        guard !process.isRunning else { return "is running" }
        if process.terminationReason == .uncaughtSignal {
            let names: [Int32: String] = [SIGSEGV: "SIGSEGV", SIGBUS: "SIGBUS", SIGABRT: "SIGABRT", SIGILL: "SIGILL",
                                          SIGKILL: "SIGKILL", SIGTERM: "SIGTERM", SIGTRAP: "SIGTRAP"]
            let signal = process.terminationStatus
            return "was killed by signal \(signal)\(names[signal].map { " (\($0))" } ?? "")"
        }
        return "exited with status \(process.terminationStatus)"
    }

    /// The crash report of the Swift runtime when there is one (its first lines), else the tail.
    func logSummary() -> String {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return "(no log)" }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if let crash = lines.firstIndex(where: { $0.contains("*** ") && $0.contains("crashed") || $0.contains("Fatal error") }) {
            // The crash line, the crashed thread, and its first frames, spaces squeezed.
            return lines[crash...].prefix(10).filter { !$0.hasPrefix("Platform") }
                .map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ") }
                .filter { !$0.isEmpty }.prefix(6).joined(separator: " / ")
        }
        return logTail()
    }

    func logTail(lines: Int = 15) -> String {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return "(no log)" }
        let tail = text.split(separator: "\n").suffix(lines).joined(separator: " / ")
        return tail.isEmpty ? "(empty log)" : tail
    }

    /// Lines of its log (warnings and errors only, at --log-level warning).
    func logLineCount() -> Int {
        ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    private func read(_ path: String) -> String? {
        (try? ProcessSupport.readFileIfExists(path)).flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) }
    }

    /// A "Name:   value kB" line of a /proc status file, as a number.
    private func status(_ path: String, _ key: String) -> Int? {
        guard let text = read(path) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            return Int(line.dropFirst(key.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }
}

/// Reads the daemon's sd_notify datagrams for as long as it runs, as systemd does. (Not
/// reading them would block the daemon: a Unix datagram socket holds only
/// `net.unix.max_dgram_qlen` unread messages, 10 by default, and then `sendto` waits.)
final class NotificationListener: @unchecked Sendable {
    private let socket: UnixDatagramSocket
    private let lock = NSLock()
    private var ready: Int64?
    private var closing = false
    private let readySignal = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private var started = false

    init(socket: UnixDatagramSocket) { self.socket = socket }

    var readyAt: Int64? { lock.withLock { ready } }

    func start() {
        lock.withLock { started = true }
        let thread = Thread { [self] in
            while !lock.withLock({ closing }) {
                guard let datagram = try? socket.receive(timeoutMilliseconds: 250) else { continue }
                let seen = Monotonic.now
                if String(decoding: datagram, as: UTF8.self).split(separator: "\n").contains("READY=1") {
                    let first = lock.withLock { () -> Bool in
                        defer { if ready == nil { ready = seen } }
                        return ready == nil
                    }
                    if first { readySignal.signal() }
                }
            }
            socket.close()
            finished.signal()
        }
        thread.name = "nimbus-bench-notify"
        thread.start()
    }

    /// True when READY=1 has come (now or before).
    func waitReady(milliseconds: Int) -> Bool {
        if readyAt != nil { return true }
        if readySignal.wait(timeout: .now() + .milliseconds(milliseconds)) == .success {
            readySignal.signal()
            return true
        }
        return readyAt != nil
    }

    func close() {
        let wasStarted = lock.withLock { () -> Bool in
            closing = true
            return started
        }
        if wasStarted { finished.wait() } else { socket.close() }
    }
}

/// What an interrupted bench (Ctrl-C, SIGTERM) must not leave behind: its daemons and its
/// data folder.
final class Cleanup: @unchecked Sendable {
    static let shared = Cleanup()
    private let lock = NSLock()
    private var daemons: Set<Int32> = []
    private var folder: String?
    private var sources: [any DispatchSourceSignal] = []

    func started(_ pid: Int32) { lock.withLock { _ = daemons.insert(pid) } }
    func stopped(_ pid: Int32) { lock.withLock { _ = daemons.remove(pid) } }

    /// On SIGINT or SIGTERM: SIGTERM to every daemon still running, remove `folder`, exit 130.
    func install(removing folder: String?) {
        lock.withLock { self.folder = folder }
        sources = ProcessSupport.handleSignals([ProcessSupport.interrupt, ProcessSupport.terminate],
                                               on: DispatchQueue(label: "nimbus-bench.signals")) { [self] _ in
            let (pids, folder) = lock.withLock { (daemons, self.folder) }
            FileHandle.standardError.write(Data("[bench] interrupted: stopping \(pids.count) daemon(s) and cleaning up\n".utf8))
            for pid in pids { kill(pid, SIGTERM) }
            Thread.sleep(forTimeInterval: 2)
            for pid in pids { kill(pid, SIGKILL) }
            if let folder { Shell.remove(folder) }
            exit(130)
        }
    }
}
