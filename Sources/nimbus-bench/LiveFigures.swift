import Foundation
import NimbusSystem

/// The figures measured on a running daemon that has synced a tree: idle CPU, memory,
/// propagation latency, restart, burst and large upload (issues #3 and #7).
struct LiveFigures {
    let options: BenchOptions
    let workspace: Workspace
    let session: Session
    /// Set when the figures run on a smaller tree than asked for: why, for their notes.
    var fallback: String? = nil

    /// Runs `names` in a fixed order that keeps the tree as the figures expect it: the idle
    /// and memory figures first (the tree as synced), latency, restart, then the bursts.
    func run(_ names: [String], into report: inout Report) {
        var memoryIndex: Int?
        var restarted: String?
        for name in ["idle.cpu", "memory.rss", "idle.cpu.100k", "sync.latency.up", "sync.latency.down",
                     "restart.unchanged", "burst.10k", "upload.1g"] where names.contains(name) {
            if !session.daemon.isRunning {
                // It crashed during the previous figure: start it again on the same folders
                // and state (as systemd would), so the remaining figures are still measured.
                let reason = "nimbusd ended (\(session.daemon.exitDescription)) during an earlier figure (\(session.daemon.logSummary().prefix(200)))"
                do {
                    let daemon = try Daemon(local: session.local, cloud: session.cloud, stateDirectory: session.stateDirectory,
                                            logPath: workspace.fresh("nimbusd-restarted") + ".log")
                    session.daemon = daemon
                    try daemon.waitReady(timeout: 300)
                    restarted = (restarted.map { $0 + "; " } ?? "") + reason + "; it was restarted before \(name)"
                } catch {
                    report.figures.append(.failed(name, unit: "", reason + "; restarting it failed: \(error)"))
                    continue
                }
            }
            progress("measuring \(name) with nimbusd on \(session.files) files")
            var figure: Figure
            if name == "idle.cpu.100k", let fallback, session.files != 100_000 {
                report.figures.append(.failed(name, unit: "s", "needs 100000 files synced; " + fallback))
                continue
            }
            switch name {
            case "idle.cpu": figure = idleCPU(name: name, window: options.idleWindowSeconds, limit: 0.05)
            case "idle.cpu.100k": figure = idleCPU(name: name, window: 60, limit: 0.1)
            case "memory.rss": figure = memory()
            case "sync.latency.up": figure = TransferFigures(options: options, workspace: workspace, session: session).latency(up: true)
            case "sync.latency.down": figure = TransferFigures(options: options, workspace: workspace, session: session).latency(up: false)
            case "restart.unchanged": figure = restart()
            case "burst.10k": figure = TransferFigures(options: options, workspace: workspace, session: session).burst()
            default: figure = TransferFigures(options: options, workspace: workspace, session: session).upload()
            }
            if let restarted { figure.note = restarted + (figure.note.isEmpty ? "" : "; " + figure.note) }
            if let fallback { figure.note = fallback + (figure.note.isEmpty ? "" : "; " + figure.note) }
            if name == "memory.rss" { memoryIndex = report.figures.count }
            report.figures.append(figure)
            progress("\(name): " + (figure.failure ?? "\(figure.value.map(format) ?? "-") \(figure.unit)"))
        }
        // The peak after everything (bursts, the large upload) completes the memory figure.
        if let memoryIndex, report.figures[memoryIndex].failure == nil, let memory = session.daemon.memory() {
            report.figures[memoryIndex].extra.append(("peak_after_all_figures_mib", Double(memory.peak) / 1024))
        }
    }

    // MARK: - Idle CPU

    /// utime + stime of the daemon over `window` seconds with nothing changing, after it has
    /// settled. The runs are the CPU used in each third of the window.
    func idleCPU(name: String, window: Int, limit: Double) -> Figure {
        let daemon = session.daemon
        let settled = daemon.waitUntilIdle(quiet: 2, timeout: 180)
        guard let cpuStart = daemon.cpuSeconds(), let nsStart = daemon.liveThreadsCPUNanoseconds(),
              let switchesStart = daemon.contextSwitches() else {
            return .failed(name, unit: "s", "cannot read /proc/\(daemon.processID)")
        }
        var thirds: [Double] = []
        var last = cpuStart
        for _ in 0..<3 {
            Monotonic.sleep(seconds: Double(window) / 3)
            let now = daemon.cpuSeconds() ?? last
            thirds.append(now - last)
            last = now
        }
        let used = last - cpuStart
        let switches = (daemon.contextSwitches() ?? switchesStart) - switchesStart
        var figure = Figure(name: name, value: used, unit: "s")
        figure.targets = [Target(subject: "CPU in \(window) s", bound: .below(limit), actual: used, unit: "s")]
        figure.runs = thirds
        figure.extra = [("window_s", Double(window)), ("files", Double(session.files)),
                        ("cpu_ms_live_threads", Double((daemon.liveThreadsCPUNanoseconds() ?? nsStart) - nsStart) / 1e6),
                        ("wakeups", Double(switches)), ("wakeups_per_s", Double(switches) / Double(window)),
                        ("settle_wait_s", settled)]
        figure.note = "utime+stime from /proc/\(daemon.processID)/stat (\(Int(Daemon.clockTicksPerSecond)) ticks/s) over \(window) s with \(session.files) files watched and nothing changing"
            + (options.quick ? " (quick: shorter window than the 30 s of the target)" : "")
        return figure
    }

    // MARK: - Memory

    /// Steady VmRSS once the daemon has settled after its initial sync (median of three
    /// readings a second apart), and the peak (VmHWM) it reached on the way.
    func memory() -> Figure {
        let name = "memory.rss"
        let daemon = session.daemon
        daemon.waitUntilIdle(quiet: 2, timeout: 180)
        var readings: [Double] = []
        var peak = 0
        for index in 0..<3 {
            if index > 0 { Monotonic.sleep(seconds: 1) }
            guard let memory = daemon.memory() else { return .failed(name, unit: "MiB", "cannot read /proc/\(daemon.processID)/status") }
            readings.append(Double(memory.rss) / 1024)
            peak = memory.peak
        }
        let steady = Stats.median(readings)!
        var figure = Figure(name: name, value: steady, unit: "MiB")
        // Issue 15's targets, for the build as packaged (--static-swift-stdlib): a build
        // linking the Swift libraries dynamically maps about 4 MiB more of them.
        let limit: Double = session.files <= 10_000 ? 16 : 48
        figure.targets = [Target(subject: "steady", bound: .below(limit), actual: steady, unit: "MiB")]
        figure.runs = readings
        figure.extra = [("peak_mib", Double(peak) / 1024), ("files", Double(session.files)),
                        ("bytes_per_file", steady * 1024 * 1024 / Double(session.files))]
        if let parts = daemon.residentParts() {
            figure.extra += [("anon_mib", Double(parts.anonymous) / 1024), ("file_mib", Double(parts.file) / 1024)]
        }
        figure.note = "VmRSS after the initial sync of \(session.files) files settled; peak_mib = VmHWM (includes the initial sync)"
        return figure
    }

    // MARK: - Restart

    /// Stops the daemon and starts it again on the unchanged tree: spawn to READY=1, and the
    /// files it copied (any file whose inode changed on either side). The daemon of the last
    /// run stays up for the figures after this one.
    func restart() -> Figure {
        let name = "restart.unchanged"
        let runs = options.restartRuns
        session.daemon.waitUntilIdle(quiet: 1, timeout: 180)
        let stopSeconds = Monotonic.seconds { session.daemon.stop() }
        do {
            let cloudBefore = try TreeMaker.inodes(in: session.cloud)
            let localBefore = try TreeMaker.inodes(in: session.local)
            let sizes = try TreeMaker.files(in: session.cloud)
            var seconds: [Double] = [], changedFiles: [Double] = [], changedBytes: [Double] = [], written: [Double] = []
            var residentAfter: [Double] = []
            for round in 0..<runs {
                Shell.sync()
                let daemon = try Daemon(local: session.local, cloud: session.cloud, stateDirectory: session.stateDirectory,
                                        logPath: workspace.fresh("nimbusd-restart") + ".log")
                session.daemon = daemon
                seconds.append(try daemon.waitReady(timeout: 300))
                written.append(Double(daemon.io()?.writeBytes ?? 0))
                if let memory = daemon.memory() { residentAfter.append(Double(memory.rss) / 1024) }
                let cloudAfter = try TreeMaker.inodes(in: session.cloud)
                let localAfter = try TreeMaker.inodes(in: session.local)
                let changed = Set(cloudBefore.keys.filter { cloudAfter[$0] != cloudBefore[$0] }
                    + localBefore.keys.filter { localAfter[$0] != localBefore[$0] })
                changedFiles.append(Double(changed.count))
                changedBytes.append(Double(changed.reduce(Int64(0)) { $0 + (sizes[$1.description] ?? 0) }))
                if round < runs - 1 { daemon.stop() }
            }
            let median = Stats.median(seconds)!
            let copied = changedBytes.max()!
            var figure = Figure(name: name, value: median, unit: "s")
            figure.targets = [Target(subject: "time", bound: .below(2), actual: median, unit: "s"),
                              Target(subject: "bytes copied", bound: .atMost(0), actual: copied, unit: "B")]
            figure.runs = seconds
            figure.extra = [("files", Double(cloudBefore.count)), ("bytes_copied", copied), ("files_replaced", changedFiles.max()!),
                            ("daemon_write_bytes", Stats.median(written)!), ("stop_s", stopSeconds)]
            if let rss = Stats.median(residentAfter) { figure.extra.append(("rss_mib_at_ready", rss)) }
            figure.note = "spawn to READY=1 (first scan of both sides done) on \(cloudBefore.count) unchanged files; "
                + "bytes copied = size of files whose inode changed on either side; daemon_write_bytes = /proc/PID/io write_bytes at READY"
            return figure
        } catch {
            if !session.daemon.isRunning {
                // Leave a daemon running for the figures that follow.
                if let daemon = try? Daemon(local: session.local, cloud: session.cloud, stateDirectory: session.stateDirectory,
                                            logPath: workspace.fresh("nimbusd-restart") + ".log") {
                    session.daemon = daemon
                    _ = try? daemon.waitReady(timeout: 300)
                }
            }
            return .failed(name, unit: "s", "\(error)")
        }
    }
}
