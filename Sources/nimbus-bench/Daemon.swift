import Dispatch
import Foundation
import NimbusSystem
import NimbusTestSupport
import Synchronization

/// The real release `nimbusd`, started on a pair of folders as systemd would start it: its
/// readiness comes over `NOTIFY_SOCKET` (READY=1 is sent after the first full sync). The
/// process, READY=1 and the stop are the tests' harness (NimbusdProcess); this adds what the
/// bench reads in /proc.
/// Who owns what: as `NimbusdProcess`, one thread (the figure's) uses it at a time;
/// `processID` is set once by `init`.
final class Daemon: NimbusdProcess, @unchecked Sendable {
    /// The daemon's pid (it is not restarted).
    private(set) var processID: Int32 = 0

    static var clockTicksPerSecond: Double { Double(sysconf(Int32(_SC_CLK_TCK))) }

    /// `--nimbusd PATH`: the binary every figure starts (set once, before the first figure);
    /// nil: the one built next to nimbus-bench.
    static let chosenExecutable = Mutex<String?>(nil)
    override var executable: String { Self.chosenExecutable.withLock { $0 } ?? super.executable }

    /// Starts `nimbusd --local local --cloud cloud --state-dir state …`; returns at once.
    init(local: String, cloud: String, stateDirectory: String, logPath: String, extraArguments: [String] = []) throws {
        super.init(name: "nimbusd", local: local, cloud: cloud, stateDirectory: stateDirectory,
                   socketPath: stateDirectory + "/ctl.sock", logPath: logPath,
                   notifyPath: "@nimbus-bench-\(ProcessInfo.processInfo.processIdentifier)-\(UInt64.random(in: 0 ... .max))")
        try makeDirectories(SystemPath(stateDirectory), permissions: 0o700)
        guard FileManager.default.createFile(atPath: logPath, contents: nil) else {
            throw BenchError("cannot create the daemon log \(logPath)")
        }
        var environment = ProcessInfo.processInfo.environment
        for name in ["WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM", "LISTEN_FDS"] { environment[name] = nil }
        do {
            try launch(arguments: pairArguments + ["--device-name", "bench", "--log-level", "warning"] + extraArguments,
                       environment: environment)
        } catch {
            throw BenchError("cannot start nimbusd: \(error)")
        }
        processID = pid ?? 0
        Cleanup.shared.started(processID)
    }

    deinit { stop() }

    /// Waits for READY=1; returns the seconds since the spawn. Throws when the daemon exits
    /// first or `timeout` passes.
    @discardableResult
    func waitReady(timeout: Double) throws -> Double {
        do {
            return try waitUntilReadyBlocking(timeout: .seconds(timeout)).seconds
        } catch {
            let reason = "\(error)".split(separator: "\n").first ?? ""
            throw BenchError("\(reason) (\(exitDescription)); log: \(logSummary())")
        }
    }

    /// SIGTERM, then SIGKILL after `timeout` seconds. Returns the exit status.
    @discardableResult
    func stop(timeout: Double = 30) -> Int32 {
        if isRunning, !endBlocking(within: .seconds(timeout)) {
            progress("nimbusd \(processID) did not stop within \(format(timeout)) s of SIGTERM; killed it")
        }
        Cleanup.shared.stopped(processID)
        return exitStatus ?? -1
    }

    // MARK: - What /proc says about it

    /// Nanoseconds on CPU of the threads alive now (schedstat): finer than `cpuSeconds`, but
    /// blind to threads that have exited.
    func liveThreadsCPUNanoseconds() -> Int64? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(processID)/task")) ?? []
        guard !tasks.isEmpty else { return nil }
        return tasks.reduce(Int64(0)) { sum, task in
            sum + (read("/proc/\(processID)/task/\(task)/schedstat")?.split(separator: " ").first.flatMap { Int64($0) } ?? 0)
        }
    }

    /// Voluntary plus involuntary context switches of the live threads: how often it woke up.
    func contextSwitches() -> Int? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(processID)/task")) ?? []
        guard !tasks.isEmpty else { return nil }
        return tasks.reduce(0) { sum, task in
            sum + (status("/proc/\(processID)/task/\(task)/status", "voluntary_ctxt_switches") ?? 0)
                + (status("/proc/\(processID)/task/\(task)/status", "nonvoluntary_ctxt_switches") ?? 0)
        }
    }

    /// Resident memory now and its peak, in KiB.
    func memory() -> (rss: Int, peak: Int)? {
        guard let rss = status("/proc/\(processID)/status", "VmRSS"), let peak = status("/proc/\(processID)/status", "VmHWM") else { return nil }
        return (rss, peak)
    }

    /// What the resident memory is made of now, in KiB: anonymous pages (heap, stacks, data
    /// written) and file pages (mostly nimbusd's own code), as /proc/PID/status splits it.
    func residentParts() -> (anonymous: Int, file: Int)? {
        guard let anonymous = status("/proc/\(processID)/status", "RssAnon"),
              let file = status("/proc/\(processID)/status", "RssFile") else { return nil }
        return (anonymous, file)
    }

    /// Bytes it asked to write (`wchar`) and bytes sent to the disk (`write_bytes`).
    func io() -> (wchar: Int, writeBytes: Int)? {
        guard let text = read("/proc/\(processID)/io") else { return nil }
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
            if let now, let before = last, Duration.nanoseconds(now - before) < .milliseconds(1) {
                if Monotonic.seconds(since: stableSince) >= quiet { break }
            } else {
                stableSince = Monotonic.now
            }
            last = now
        }
        return Monotonic.seconds(since: start)
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
        return shortLogTail()
    }

    /// The last lines of the log on one line.
    func shortLogTail(lines: Int = 15) -> String {
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

/// What an interrupted bench (Ctrl-C, SIGTERM) must not leave behind: its daemons and its
/// data folder.
/// Who owns what: `daemons` and `folder` are read and written under `lock` only (the figures'
/// threads add and remove, the signal thread reads); `@unchecked Sendable` for that lock.
final class Cleanup: @unchecked Sendable {
    static let shared = Cleanup()
    private let lock = NSLock()
    private var daemons: Set<Int32> = []
    private var folder: String?

    func started(_ pid: Int32) { lock.withLock { _ = daemons.insert(pid) } }
    func stopped(_ pid: Int32) { lock.withLock { _ = daemons.remove(pid) } }

    /// Taken by a signal thread from `install` on; installed before the bench starts any thread,
    /// so every thread inherits the block (`ProcessSupport.handleSignals`).
    static let signals = [ProcessSupport.interrupt, ProcessSupport.terminate]

    /// On SIGINT or SIGTERM: SIGTERM to every daemon still running, remove `folder`, exit 130.
    func install(removing folder: String?) {
        lock.withLock { self.folder = folder }
        ProcessSupport.handleSignals(Self.signals) { [self] _ in
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
