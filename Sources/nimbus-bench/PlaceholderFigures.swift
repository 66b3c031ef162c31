import Foundation
import NimbusSystem

/// Files on demand (issue #5): placeholders for a whole tree, and `nimbusctl download` of a
/// small and a large file, against `cp` of the same data in the same run.
struct PlaceholderFigures {
    let options: BenchOptions
    let workspace: Workspace

    static let names = ["placeholders.create", "download.4k", "download.100m"]

    var ctl: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("nimbusctl").path
    }

    /// On-demand mode with suffix placeholders, which these figures measure (as root on ext4
    /// the daemon would choose real-name ones: HydrationFigures measures those).
    static func suffixStyle(_ workspace: Workspace) throws -> [String] {
        let config = workspace.root + "/suffix-style.conf"
        try "[placeholders]\nstyle = suffix\n".write(toFile: config, atomically: true, encoding: .utf8)
        return ["--mode", "on-demand", "--config", config]
    }

    func run(into report: inout Report) {
        if options.wants("placeholders.create") { report.figures.append(create()) }
        guard options.wantsAny(["download.4k", "download.100m"]) else { return }
        do {
            let pair = try OnDemandPair(workspace: workspace, label: "download")
            defer { pair.stop() }
            if options.wants("download.4k") { report.figures.append(smallDownloads(pair)) }
            if options.wants("download.100m") { report.figures.append(largeDownload(pair)) }
        } catch {
            for name in ["download.4k", "download.100m"] where options.wants(name) {
                report.figures.append(.failed(name, unit: "", "\(error)"))
            }
        }
    }

    /// Spawn to READY with an empty local folder and a cloud tree: every file becomes a
    /// placeholder. Compared with `cp -a` of the same tree of real files.
    func create() -> Figure {
        let files = options.quick ? 1_000 : 10_000
        let name = "placeholders.create"
        do {
            let tree = try workspace.sourceTree(files: files)
            let creation = PlaceholderCreation(workspace: workspace, label: "placeholders",
                                               daemonArguments: try Self.suffixStyle(workspace)) { local, _ in
                let made = try TreeMaker.files(in: local).keys.filter { $0.hasSuffix(".nimbus") }.count
                guard made == files else { throw BenchError("\(made) placeholders for \(files) cloud files") }
            }
            let runs = try creation.measure(tree: tree, copied: tree, runs: options.runs(full: 3, quick: 1))
            var figure = Figure(name: name, value: Stats.median(runs.ours), unit: "s")
            figure.compare = [("cp -a", Stats.median(runs.cp))]
            figure.ratio = Stats.median(runs.ratios)
            figure.ratioLabel = "to cp -a"
            figure.runs = runs.ours
            figure.extra = [("files", Double(files))]
            figure.note = "\(files) cloud files of 4 KiB, on-demand mode, empty local folder: nimbusd spawn to READY "
                + "(every placeholder written, flushed and journaled); cp -a copies the same tree of real files"
            return figure
        } catch {
            return .failed(name, unit: "s", "\(error)")
        }
    }

    /// `nimbusctl download` of a 4 KiB placeholder, process start included, until it exits
    /// with the file in place.
    func smallDownloads(_ pair: OnDemandPair) -> Figure {
        let name = "download.4k"
        let samples = options.quick ? 20 : 50
        do {
            var content = Content(seed: 44)
            for index in 0..<samples {
                try Data(content.next(size: 4096)).write(to: URL(fileURLWithPath: pair.cloud + "/small-\(index).bin"))
            }
            try pair.waitForPlaceholders((0..<samples).map { "small-\($0).bin" })
            var seconds: [Double] = []
            for index in 0..<samples {
                let file = "small-\(index).bin"
                let result = try Shell.check(ctl, ["--socket", pair.socket, "download", file], discardOutput: true)
                guard fileSize(pair.local + "/" + file) == 4096 else { throw BenchError("\(file) is not complete after download") }
                seconds.append(result.seconds)
            }
            let p50 = Stats.median(seconds)! * 1000
            var figure = Figure(name: name, value: p50, unit: "ms")
            figure.targets = [Target(subject: "p50", bound: .below(10), actual: p50)]
            figure.runs = seconds.map { $0 * 1000 }
            figure.extra = [("p99_ms", Stats.percentile(seconds, 99)! * 1000), ("samples", Double(samples))]
            figure.note = "nimbusctl download of a 4 KiB placeholder: spawn of nimbusctl to its exit with the file complete "
                + "and durable (fsync); includes nimbusctl's process start"
            return figure
        } catch {
            return .failed(name, unit: "ms", "\(error)")
        }
    }

    /// `nimbusctl download` of a 100 MiB placeholder against `cp` of the cloud file.
    func largeDownload(_ pair: OnDemandPair) -> Figure {
        let name = "download.100m"
        let bytes: Int64 = options.quick ? 32 << 20 : 100 << 20
        let mebibytes = Double(bytes) / Double(1 << 20)
        let runs = options.runs(full: 3, quick: 1)
        guard let cp = Shell.which("cp") else { return .failed(name, unit: "MiB/s", "cp is not installed") }
        do {
            let file = "large.bin"
            try writeBigFile(pair.cloud + "/" + file, bytes: bytes, sync: true)
            try pair.waitForPlaceholders([file])
            var ours: [Double] = [], cpTimes: [Double] = [], cpSync: [Double] = [], ratios: [Double] = []
            for round in 0..<runs {
                var times: (ours: Double, cp: Double) = (0, 0)
                for tool in rotated(["nimbusctl", "cp"], by: round) {
                    Shell.sync()
                    if tool == "cp" {
                        let target = workspace.fresh("download-cp") + ".bin"
                        times.cp = try Shell.check(cp, [pair.cloud + "/" + file, target]).seconds
                        cpSync.append(times.cp + Shell.sync())
                        try? FileManager.default.removeItem(atPath: target)
                        continue
                    }
                    times.ours = try Shell.check(ctl, ["--socket", pair.socket, "download", file], discardOutput: true).seconds
                    guard fileSize(pair.local + "/" + file) == bytes else { throw BenchError("\(file) is not complete after download") }
                    _ = try Shell.check(ctl, ["--socket", pair.socket, "evict", file], discardOutput: true)
                }
                ours.append(times.ours)
                cpTimes.append(times.cp)
                ratios.append(times.cp / times.ours)
                progress("download round \(round + 1)/\(runs): nimbusctl \(format(times.ours)) s, cp \(format(times.cp)) s")
            }
            var figure = Figure(name: name, value: mebibytes / Stats.median(ours)!, unit: "MiB/s")
            figure.compare = [("cp", mebibytes / Stats.median(cpTimes)!), ("cp && sync", mebibytes / Stats.median(cpSync)!)]
            figure.ratio = Stats.median(ratios)
            figure.ratioLabel = "to cp"
            figure.targets = [Target(subject: "ratio to cp", bound: .atLeast(0.9), actual: figure.ratio)]
            figure.runs = ours.map { mebibytes / $0 }
            figure.extra = [("seconds", Stats.median(ours)!), ("cp_seconds", Stats.median(cpTimes)!)]
            figure.note = "\(Int(mebibytes)) MiB placeholder: nimbusctl download to its exit (durable: fsync); cp copies the cloud "
                + "file to a fresh path (page cache only; 'cp && sync' adds its writeback); evicted again between rounds"
            return figure
        } catch {
            return .failed(name, unit: "MiB/s", "\(error)")
        }
    }
}

/// A running `nimbusd --mode on-demand` on fresh folders.
struct OnDemandPair {
    let local: String
    let cloud: String
    let socket: String
    let daemon: Daemon

    init(workspace: Workspace, label: String) throws {
        try self.init(workspace: workspace, label: label, arguments: try PlaceholderFigures.suffixStyle(workspace))
    }

    /// Fresh folders `LABEL-local`, `LABEL-cloud` and `LABEL-state`, and a daemon on them
    /// started with `arguments`, READY.
    init(workspace: Workspace, label: String, arguments: [String]) throws {
        local = try workspace.freshDirectory(label + "-local")
        cloud = try workspace.freshDirectory(label + "-cloud")
        let state = workspace.fresh(label + "-state")
        socket = state + "/ctl.sock"
        daemon = try Daemon(local: local, cloud: cloud, stateDirectory: state, logPath: state + ".log",
                            extraArguments: arguments)
        _ = try daemon.waitReady(timeout: 120)
    }

    func waitForPlaceholders(_ files: [String], timeout: Double = 60) throws {
        let deadline = Monotonic.deadline(after: timeout)
        while files.contains(where: { !FileManager.default.fileExists(atPath: local + "/" + $0 + ".nimbus") }) {
            guard !Monotonic.hasPassed(deadline) else { throw BenchError("placeholders did not appear within \(Int(timeout)) s") }
            Monotonic.sleep(seconds: 0.01)
        }
    }

    func stop() { _ = daemon.stop() }
}
