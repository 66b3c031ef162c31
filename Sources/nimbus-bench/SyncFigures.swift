import Foundation
import NimbusSystem

/// A running `nimbusd` on a synced tree, handed from the initial sync to the figures that
/// need a live daemon (idle CPU, memory, latency, restart, burst, upload).
final class Session {
    var daemon: Daemon
    let files: Int
    let local: String
    let cloud: String
    let stateDirectory: String
    let readySeconds: Double

    init(daemon: Daemon, files: Int, readySeconds: Double) {
        self.daemon = daemon
        self.files = files
        self.local = daemon.local
        self.cloud = daemon.cloud
        self.stateDirectory = daemon.stateDirectory
        self.readySeconds = readySeconds
    }
}

/// `sync.initial.N` for each size of the ladder, then the live figures on the same daemon.
final class SyncFigures {
    let options: BenchOptions
    let workspace: Workspace
    let cp: String?
    let rsync: String?
    /// Time per file of the previous size, for the growth figure.
    private var previous: (files: Int, ours: Double, cp: Double)?

    init(options: BenchOptions, workspace: Workspace) {
        self.options = options
        self.workspace = workspace
        cp = Shell.which("cp")
        rsync = Shell.which("rsync")
    }

    /// The figures that run on the live daemon of the tree of `files` files.
    func liveFigures(for files: Int) -> [String] {
        var names: [String] = []
        if files == options.idleTreeSize { names.append("idle.cpu") }
        if files == options.syncSizes.last! {
            names.append("memory.rss")
            if files == 100_000 && !options.quick { names.append("idle.cpu.100k") }
            names += ["sync.latency.up", "sync.latency.down", "restart.unchanged", "burst.10k"]
            if options.uploadBytes != nil { names.append("upload.1g") }
        }
        return names
    }

    func run(into report: inout Report) {
        // The largest tree the daemon synced so far: the live figures fall back to it when
        // the daemon cannot sync the largest one.
        var lastGood: Int?
        for files in options.syncSizes {
            let initialName = "sync.initial.\(files)"
            let live = liveFigures(for: files).filter(options.wants)
            guard options.wants(initialName) || !live.isEmpty else { continue }
            var session: Session?
            var failure: String?
            if options.wants(initialName) {
                let (figure, kept) = initial(files: files, keepSession: !live.isEmpty)
                report.figures.append(figure)
                progress(figure.failure.map { "\(initialName) failed: \($0)" } ?? "\(initialName): \(format(figure.value ?? 0)) s")
                session = kept
                if let reason = figure.failure { failure = reason } else { lastGood = files }
            }
            guard !live.isEmpty else { continue }
            if session == nil && failure == nil {
                do {
                    session = try startSession(source: try workspace.sourceTree(files: files), files: files)
                    lastGood = files
                } catch {
                    failure = "\(error)"
                }
            }
            var fallback: String?
            if session == nil, let good = lastGood, good != files, let reason = failure {
                let why = options.wants(initialName) ? "see \(initialName)" : String(reason.prefix(200))
                fallback = "measured on \(good) files: nimbusd could not sync \(files) files (\(why))"
                progress("falling back to \(good) files for \(live.joined(separator: ", "))")
                session = try? startSession(source: try workspace.sourceTree(files: good), files: good)
            }
            guard let session else {
                for name in live {
                    report.figures.append(.failed(name, unit: "", "nimbusd could not sync \(files) files: \(failure ?? "?")"))
                }
                continue
            }
            LiveFigures(options: options, workspace: workspace, session: session, fallback: fallback).run(live, into: &report)
            end(session)
        }
    }

    // MARK: - Initial sync

    /// What the first sync is compared with: plain copies, and the same made durable with
    /// `sync -f` of the destination's filesystem.
    static let baselines = ["cp -a", "rsync -a", "cp -a && sync -f", "rsync -a && sync -f"]

    func initial(files: Int, keepSession: Bool) -> (Figure, Session?) {
        let name = "sync.initial.\(files)"
        guard let cp else { return (.failed(name, unit: "s", "cp is not installed"), nil) }
        let runs = options.initialRuns(files: files)
        var kept: Session?
        do {
            let source = try workspace.sourceTree(files: files)
            let expected = TreeMaker.relativePaths(files: files)
            var seconds: [String: [Double]] = [:]
            var ratios: [String: [Double]] = [:]
            let tools = ["nimbusd", "cp -a"] + (rsync == nil ? [] : ["rsync -a"])
            // A daemon that crashes or hangs is not run again: the figure fails with why, and
            // the commands of that round are still reported.
            var daemonFailure: String?
            for round in 0..<runs where daemonFailure == nil {
                var order = rotated(tools, by: round)
                let isLast = round == runs - 1
                // The daemon of the last round stays up for the live figures: run it last.
                if isLast && keepSession { order = order.filter { $0 != "nimbusd" } + ["nimbusd"] }
                var times: [String: Double] = [:]
                for tool in order {
                    Shell.sync()
                    switch tool {
                    case "nimbusd":
                        let session: Session
                        do {
                            session = try startSession(source: source, files: files)
                        } catch {
                            daemonFailure = "\(error)"
                            continue
                        }
                        times[tool] = session.readySeconds
                        seconds["nimbusd && sync", default: []].append(session.readySeconds + Shell.sync())
                        if let missing = try TreeMaker.missing(expected, in: session.cloud) {
                            end(session)
                            throw BenchError("READY=1 came but \(missing)")
                        }
                        if isLast && keepSession { kept = session } else { end(session) }
                    default:
                        let destination = workspace.fresh(tool == "cp -a" ? "cp" : "rsync")
                        let result = tool == "cp -a"
                            ? try Shell.check(cp, ["-a", source, destination])
                            : try Shell.check(rsync!, ["-a", source + "/", destination + "/"])
                        times[tool] = result.seconds
                        times[tool + " && sync -f"] = result.seconds + Shell.sync(filesystemOf: destination)
                        Shell.remove(destination)
                    }
                }
                for (tool, time) in times { seconds[tool, default: []].append(time) }
                if let ours = times["nimbusd"] {
                    for tool in tools.dropFirst() {
                        ratios[tool, default: []].append(ours / times[tool]!)
                        ratios[tool + " && sync -f", default: []].append(ours / times[tool + " && sync -f"]!)
                    }
                }
                progress("\(name) round \(round + 1)/\(runs): " + order.map { "\($0) \(times[$0].map(format) ?? "failed") s" }.joined(separator: ", "))
            }
            if let daemonFailure {
                var figure = Figure.failed(name, unit: "s", daemonFailure)
                figure.compare = Self.baselines.map { ($0, seconds[$0].flatMap(Stats.median)) }
                figure.runs = seconds["nimbusd"] ?? []
                figure.note = "\(files) files of 4 KiB in \(files / 100) folders; nimbusd failed, so it was not run again"
                return (figure, kept)
            }
            let ours = Stats.median(seconds["nimbusd"]!)!
            let cpTime = Stats.median(seconds["cp -a"]!)!
            var figure = Figure(name: name, value: ours, unit: "s")
            figure.compare = Self.baselines.map { ($0, seconds[$0].flatMap(Stats.median)) }
            figure.ratio = Stats.median(ratios["cp -a"]!)
            figure.ratioLabel = "to cp -a"
            figure.targets = [Target(subject: "ratio to cp -a", bound: .atMost(1.2), actual: figure.ratio)]
            figure.runs = seconds["nimbusd"]!
            if let rsyncRatios = ratios["rsync -a"] { figure.extra.append(("ratio_to_rsync", Stats.median(rsyncRatios)!)) }
            // The durable baseline (issue 15): nimbusd's READY=1 comes after every file is fsynced.
            let durableRatio = Stats.median(ratios["cp -a && sync -f"]!)!
            figure.extra.append(("ratio_to_cp_sync_f", durableRatio))
            if files == 1_000 {
                figure.targets.append(Target(subject: "ratio to cp -a && sync -f", bound: .atMost(1.0), actual: durableRatio))
            }
            figure.extra.append(("nimbusd_then_sync_s", Stats.median(seconds["nimbusd && sync"]!)!))
            figure.extra.append(("us_per_file", ours / Double(files) * 1e6))
            figure.extra.append(("cp_us_per_file", cpTime / Double(files) * 1e6))
            if let previous {
                figure.extra.append(("growth_per_file_vs_\(previous.files)", (ours / Double(files)) / previous.ours))
                figure.extra.append(("cp_growth_per_file_vs_\(previous.files)", (cpTime / Double(files)) / previous.cp))
            }
            previous = (files, ours / Double(files), cpTime / Double(files))
            figure.note = "\(files) files of 4 KiB in \(files / 100) folders, empty cloud, fresh state: spawn to READY=1 (after the first full sync), every file checked; "
                + "ratio = median of per-round ratios (ratio_to_cp_sync_f: to cp -a then sync -f of the destination's filesystem); growth = time per file / that of the previous size (1 = linear)"
                + (rsync == nil ? "; rsync is not installed: not measured" : "")
            return (figure, kept)
        } catch {
            if let kept { end(kept) }
            return (.failed(name, unit: "s", "\(error)"), nil)
        }
    }

    // MARK: - Sessions

    /// Starts `nimbusd` on `source` with an empty cloud folder and a fresh state directory;
    /// returns once it is READY (the first full sync done).
    func startSession(source: String, files: Int) throws -> Session {
        let cloud = try workspace.freshDirectory("cloud")
        let state = workspace.fresh("state")
        let daemon = try Daemon(local: source, cloud: cloud, stateDirectory: state, logPath: workspace.fresh("nimbusd") + ".log")
        do {
            let seconds = try daemon.waitReady(timeout: min(600, 120 + Double(files) / 100))
            return Session(daemon: daemon, files: files, readySeconds: seconds)
        } catch {
            daemon.stop()
            cleanUp(local: source, cloud: cloud, state: state)
            throw error
        }
    }

    /// Stops the daemon and puts the source tree back as it was (the daemon's local marker
    /// and whatever the live figures added are removed).
    func end(_ session: Session) {
        session.daemon.stop()
        cleanUp(local: session.local, cloud: session.cloud, state: session.stateDirectory)
    }

    private func cleanUp(local: String, cloud: String, state: String) {
        let treeFolder = try! NSRegularExpression(pattern: "^d[0-9]{4}$")
        for name in (try? FileManager.default.contentsOfDirectory(atPath: local)) ?? []
        where treeFolder.firstMatch(in: name, range: NSRange(name.startIndex..., in: name)) == nil {
            Shell.remove(local + "/" + name)
        }
        Shell.remove(cloud)
        Shell.remove(state)
    }
}
