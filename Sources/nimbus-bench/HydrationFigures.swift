import Foundation
import Glibc
import NimbusSystem

/// Real-name placeholders (issue 16): a not-downloaded file filled by the daemon when it is
/// opened, against the same work done by hand in the same run. They need what real-name
/// placeholders need (root, Linux ≥ 6.14, the bench folder on ext4/xfs/btrfs: `--dir /var/tmp`
/// where /tmp is a tmpfs); without it the daemon writes suffix placeholders and the figures
/// fail saying why.
struct HydrationFigures {
    let options: BenchOptions
    let workspace: Workspace

    static let names = ["hydrate.open.4k", "hydrate.read.100m", "placeholders.create.realname"]

    func run(into report: inout Report) {
        if options.wants("placeholders.create.realname") { report.figures.append(create()) }
        guard options.wantsAny(["hydrate.open.4k", "hydrate.read.100m"]) else { return }
        do {
            let pair = try RealNamePair(workspace: workspace, label: "hydrate")
            defer { pair.stop() }
            if options.wants("hydrate.open.4k") { report.figures.append(firstByte(pair)) }
            if options.wants("hydrate.read.100m") { report.figures.append(largeRead(pair)) }
        } catch {
            for (name, unit) in [("hydrate.open.4k", "ms"), ("hydrate.read.100m", "s")] where options.wants(name) {
                report.figures.append(.failed(name, unit: unit, "\(error)"))
            }
        }
    }

    /// `open()` of a not-downloaded 4 KiB file to its first byte, by this process (already
    /// running), one file after another; each sample alternates with the same on a file of
    /// the cloud folder (the page cache's figure, for scale).
    func firstByte(_ pair: RealNamePair) -> Figure {
        let name = "hydrate.open.4k"
        let samples = options.quick ? 50 : 500
        do {
            var content = Content(seed: 16)
            let files = (0..<samples).map { "small/f\($0).bin" }
            try makeDirectories(SystemPath(pair.cloud + "/small"))
            for file in files { try Data(content.next(size: 4096)).write(to: URL(fileURLWithPath: pair.cloud + "/" + file)) }
            try pair.waitForPlaceholders(files, size: 4096)
            Shell.sync()
            var ours: [Double] = [], cached: [Double] = []
            for (index, file) in files.enumerated() {
                for side in rotated(["local", "cloud"], by: index) {
                    let seconds = try Self.openToFirstByte((side == "local" ? pair.local : pair.cloud) + "/" + file)
                    if side == "local" { ours.append(seconds) } else { cached.append(seconds) }
                }
            }
            let p50 = Stats.median(ours)! * 1000, p99 = Stats.percentile(ours, 99)! * 1000
            var figure = Figure(name: name, value: p50, unit: "ms")
            figure.targets = [Target(subject: "p50", bound: .below(1), actual: p50, unit: "ms"),
                              Target(subject: "p99", bound: .below(5), actual: p99, unit: "ms")]
            figure.compare = [("open+read of a cached file", Stats.median(cached)! * 1000)]
            figure.runs = ours.map { $0 * 1000 }
            figure.extra = [("p99_ms", p99), ("max_ms", ours.max()! * 1000), ("samples", Double(samples))]
            figure.note = "open() of a not-downloaded 4 KiB file to its first byte read, in the bench process "
                + "(the daemon fills it, fsync included); compared with open+read of the cloud copy (page cache)"
            return figure
        } catch {
            return .failed(name, unit: "ms", "\(error)")
        }
    }

    static func openToFirstByte(_ path: String) throws -> Double {
        var byte: UInt8 = 0
        let start = Monotonic.now
        let file = try FileDescriptor.open(SystemPath(path))
        let count = try withUnsafeMutableBytes(of: &byte) { try file.read(into: $0) }
        let seconds = Monotonic.seconds(since: start)
        try file.close()
        guard count == 1 else { throw BenchError("\(path): read \(count) bytes, expected 1") }
        return seconds
    }

    /// `cat` of a not-downloaded 100 MiB file to /dev/null against `cat` of the cloud copy plus
    /// `dd … conv=fsync` writing a local copy of it: the same reads and durable writes, by hand.
    func largeRead(_ pair: RealNamePair) -> Figure {
        let name = "hydrate.read.100m"
        let bytes: Int64 = options.quick ? 32 << 20 : 100 << 20
        let runs = options.runs(full: 5, quick: 2)
        guard let cat = Shell.which("cat"), let dd = Shell.which("dd") else { return .failed(name, unit: "s", "cat or dd is missing") }
        do {
            let file = "large.bin"
            try writeBigFile(pair.cloud + "/" + file, bytes: bytes, sync: true)
            try pair.waitForPlaceholders([file], size: bytes)
            var ours: [Double] = [], byHand: [Double] = [], ratios: [Double] = []
            for round in 0..<runs {
                var times: (ours: Double, byHand: Double) = (0, 0)
                for side in rotated(["nimbusd", "by hand"], by: round) {
                    Shell.sync()
                    if side == "by hand" {
                        let copy = workspace.fresh("hydrate-copy") + ".bin"
                        let read = try Shell.check(cat, [pair.cloud + "/" + file], discardOutput: true).seconds
                        let write = try Shell.check(dd, ["if=" + pair.cloud + "/" + file, "of=" + copy, "bs=1M", "conv=fsync",
                                                         "status=none"]).seconds
                        times.byHand = read + write
                        try? FileManager.default.removeItem(atPath: copy)
                        continue
                    }
                    times.ours = try Shell.check(cat, [pair.local + "/" + file], discardOutput: true).seconds
                    guard try pair.state(of: file) == "downloaded" else { throw BenchError("\(file) is not downloaded after cat") }
                    try pair.evict(file)
                }
                ours.append(times.ours)
                byHand.append(times.byHand)
                ratios.append(times.ours / times.byHand)
                progress("hydrate.read round \(round + 1)/\(runs): cat of the placeholder \(format(times.ours)) s, "
                         + "cat + dd conv=fsync \(format(times.byHand)) s")
            }
            var figure = Figure(name: name, value: Stats.median(ours), unit: "s")
            figure.compare = [("cat + dd conv=fsync", Stats.median(byHand))]
            figure.ratio = Stats.median(ratios)
            figure.ratioLabel = "to cat + dd conv=fsync"
            figure.targets = [Target(subject: "ratio", bound: .atMost(1.1), actual: figure.ratio)]
            figure.runs = ours
            figure.extra = [("MiB", Double(bytes >> 20))]
            figure.note = "cat of a not-downloaded \(bytes >> 20) MiB file to /dev/null (the daemon fills it, fsync included); "
                + "by hand: cat of the cloud copy to /dev/null plus dd bs=1M conv=fsync of it to a fresh local file; "
                + "evicted again between rounds, sync before each command, order alternating"
            return figure
        } catch {
            return .failed(name, unit: "s", "\(error)")
        }
    }

    /// Spawn to READY with an empty local folder and a cloud tree: every file becomes a
    /// real-name placeholder. Compared with `cp -a` of the same tree of empty files.
    func create() -> Figure {
        let files = options.quick ? 1_000 : 10_000
        let name = "placeholders.create.realname"
        do {
            let tree = try workspace.sourceTree(files: files)
            // The same names and folders, every file empty (untimed).
            let empty = workspace.fresh("empty-tree")
            try Shell.check(Shell.which("cp") ?? "/bin/cp", ["-a", "--attributes-only", tree, empty])
            defer { Shell.remove(empty) }
            let creation = PlaceholderCreation(workspace: workspace, label: "real-name placeholders",
                                               daemonArguments: ["--mode", "on-demand"]) { local, socket in
                let style = RealNamePair.style(socket: socket)
                guard style.style == "real-name" else { throw BenchError("the daemon writes \(style.style) placeholders: \(style.reason)") }
                let made = try RealNamePair.countPlaceholders(in: local, size: Int64(TreeMaker.fileSize))
                guard made == files else { throw BenchError("\(made) real-name placeholders for \(files) cloud files") }
            }
            let runs = try creation.measure(tree: tree, copied: empty, runs: options.runs(full: 3, quick: 1))
            var figure = Figure(name: name, value: Stats.median(runs.ours), unit: "s")
            figure.compare = [("cp -a of empty files", Stats.median(runs.cp))]
            figure.ratio = Stats.median(runs.ratios)
            figure.ratioLabel = "to cp -a"
            figure.targets = [Target(subject: "ratio", bound: .atMost(1.5), actual: figure.ratio)]
            figure.runs = runs.ours
            figure.extra = [("files", Double(files))]
            figure.note = "\(files) cloud files of 4 KiB, on-demand mode, empty local folder: nimbusd spawn to READY (every "
                + "real-name placeholder created, marked and journaled); cp -a copies the same tree with every file empty"
            return figure
        } catch {
            return .failed(name, unit: "s", "\(error)")
        }
    }
}
