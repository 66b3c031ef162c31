import Dispatch
import Foundation
import NimbusSystem
import NimbusVocabulary

/// Figures that time a change from one folder until it is complete in the other, with the
/// daemon running: `sync.latency.up/down`, `burst.10k`, `upload.1g`.
struct TransferFigures {
    let options: BenchOptions
    let workspace: Workspace
    let session: Session

    // MARK: - Latency

    /// From `close()` of a new 4 KiB file in one folder to its complete arrival in the other
    /// (seen with inotify, size checked), one file at a time, 5 ms apart.
    func latency(up: Bool) -> Figure {
        let name = "sync.latency.\(up ? "up" : "down")"
        let (source, destination) = up ? (session.local, session.cloud) : (session.cloud, session.local)
        let count = options.latencySamples
        let timeout = 10.0
        do {
            let floor = try durableWriteFloor()
            session.daemon.waitUntilIdle(quiet: 1, timeout: 120)
            let watch = try ArrivalWatch(root: destination, daemon: session.daemon)
            defer { watch.close() }
            var content = Content(seed: up ? 11 : 22)
            var samples: [Double] = []
            var lost = 0
            for index in 0..<count {
                let path = try RelativePath(validating: "lat-\(up ? "up" : "down")-\(index).bin")
                let file = try FileDescriptor.open(SystemPath(source).appending(path), [.writeOnly, .create, .exclusive],
                                                   permissions: 0o644)
                try file.writeAll(content.next(size: 4096))
                let closing = Monotonic.now
                try file.close()
                if let arrived = try watch.waitFor(path, size: 4096, timeout: timeout) {
                    samples.append(Double(arrived - closing) / 1e6)
                } else {
                    lost += 1
                    samples.append(timeout * 1000)
                }
                Monotonic.sleep(seconds: 0.005)
            }
            if lost * 10 > count { throw BenchError("\(lost) of \(count) files did not arrive within \(format(timeout)) s") }
            let p50 = Stats.percentile(samples, 50)!, p99 = Stats.percentile(samples, 99)!
            var figure = Figure(name: name, value: p50, unit: "ms (p50)")
            figure.targets = [Target(subject: "p50", bound: .below(3), actual: p50, unit: "ms"),
                              Target(subject: "p99", bound: .below(20), actual: p99, unit: "ms")]
            figure.compare = [("write+fsync+rename of 4 KiB (floor)", floor)]
            figure.runs = samples
            figure.extra = [("p99_ms", p99), ("p90_ms", Stats.percentile(samples, 90)!), ("min_ms", samples.min()!),
                            ("max_ms", samples.max()!), ("samples", Double(count)), ("lost", Double(lost)),
                            ("files_watched", Double(session.files))]
            figure.note = "\(up ? "local -> cloud" : "cloud -> local"), new 4 KiB file, close() to rename into place seen by inotify "
                + "(size checked), \(count) samples 5 ms apart, \(session.files) files watched; the floor is the median cost here of writing, fsyncing and renaming a 4 KiB file, the part of a durable copy before the file appears"
            return figure
        } catch {
            return .failed(name, unit: "ms (p50)", "\(error)")
        }
    }

    /// Median ms of what an atomic durable 4 KiB copy must do on this disk before its file
    /// appears: write a temporary file, fsync it, rename it into place (in a folder of its own,
    /// out of the daemon's sight). The directory fsync and the journal commit come after.
    func durableWriteFloor() throws -> Double {
        let directoryPath = try workspace.freshDirectory("floor")
        defer { Shell.remove(directoryPath) }
        let directory = try FileDescriptor.open(SystemPath(directoryPath), .directory)
        defer { try? directory.close() }
        var content = Content(seed: 33)
        var samples: [Double] = []
        for index in 0..<20 {
            let start = Monotonic.now
            let file = try FileDescriptor.open(SystemPath("tmp-\(index)"), [.writeOnly, .create, .exclusive], relativeTo: directory)
            try file.writeAll(content.next(size: 4096))
            try file.sync()
            try file.close()
            try directory.rename(SystemPath("tmp-\(index)"), to: SystemPath("file-\(index)"))
            samples.append(Double(Monotonic.now - start) / 1e6)
        }
        return Stats.median(samples)!
    }

    // MARK: - Burst

    /// 10 000 new files (100 folders) written as fast as the bench can, while the daemon
    /// runs: from the first write until all are in the cloud. Compared with cp -a of the same
    /// files (made beforehand) to a fresh folder.
    func burst() -> Figure {
        let name = "burst.10k"
        let count = options.burstFiles
        let runs = options.runs(full: 3, quick: 1)
        guard let cp = Shell.which("cp") else { return .failed(name, unit: "s", "cp is not installed") }
        var ours: [Double] = [], creating: [Double] = [], cpTimes: [Double] = [], cpSync: [Double] = [], ratios: [Double] = []
        do {
            let cpSource = workspace.fresh("burst-src")
            try TreeMaker.make(at: cpSource, files: count)
            defer { Shell.remove(cpSource) }
            for round in 0..<runs {
                var pair: (ours: Double, cp: Double) = (0, 0)
                for tool in rotated(["nimbusd", "cp -a"], by: round) {
                    if tool == "cp -a" {
                        Shell.sync()
                        let destination = workspace.fresh("burst-cp")
                        pair.cp = try Shell.check(cp, ["-a", cpSource, destination]).seconds
                        cpTimes.append(pair.cp)
                        cpSync.append(pair.cp + Shell.sync())
                        Shell.remove(destination)
                        continue
                    }
                    session.daemon.waitUntilIdle(quiet: 1, timeout: 180)
                    Shell.sync()
                    let folder = "burst-\(round)"
                    let expected = Set(try TreeMaker.relativePaths(files: count, under: folder + "/").map { try RelativePath(validating: $0) })
                    let watch = try ArrivalWatch(root: session.cloud, daemon: session.daemon)
                    defer { watch.close() }
                    let local = session.local
                    let writer = Background {
                        try TreeMaker.make(at: local, files: count, under: folder + "/", seed: UInt64(round + 100))
                    }
                    guard let arrived = try watch.waitForAll(expected, under: folder, timeout: 600) else {
                        _ = writer.wait()
                        throw BenchError("not all \(count) files arrived in the cloud within 600 s: "
                            + ((try? TreeMaker.missing(expected.map(\.description), in: session.cloud, under: folder)) ?? "?"))
                    }
                    let written = writer.wait()
                    if let error = written.error { throw error }
                    pair.ours = Double(arrived - written.started) / 1e9
                    ours.append(pair.ours)
                    creating.append(written.seconds)
                }
                ratios.append(pair.ours / pair.cp)
                progress("burst round \(round + 1)/\(runs): nimbusd \(format(pair.ours)) s, cp -a \(format(pair.cp)) s")
            }
            let median = Stats.median(ours)!
            var figure = Figure(name: name, value: median, unit: "s")
            figure.compare = [("cp -a", Stats.median(cpTimes)), ("cp -a && sync", Stats.median(cpSync))]
            figure.ratio = Stats.median(ratios)
            figure.ratioLabel = "to cp -a"
            figure.runs = ours
            figure.extra = [("files", Double(count)), ("writing_s", Stats.median(creating)!), ("files_per_s", Double(count) / median)]
            figure.note = "\(count) new 4 KiB files in \(count / 100) folders written into the local folder while nimbusd runs (\(session.files)+ files watched): "
                + "first write to the last file complete in the cloud (writing_s: the bench's own writing); cp -a of the same files to a fresh folder"
            return figure
        } catch {
            // The rounds that completed are kept: they show how the time grew before the failure.
            var figure = Figure.failed(name, unit: "s", "in round \(ours.count + 1): \(error)")
            figure.compare = [("cp -a", Stats.median(cpTimes)), ("cp -a && sync", Stats.median(cpSync))]
            figure.runs = ours
            return figure
        }
    }

    // MARK: - Large upload

    /// A 1 GiB file written into the local folder: from its close() to its complete arrival
    /// in the cloud, as throughput, against cp of a 1 GiB file.
    func upload() -> Figure {
        let name = "upload.1g"
        guard let bytes = options.uploadBytes else { return .failed(name, unit: "MiB/s", "not measured with --quick") }
        let runs = options.runs(full: 3, quick: 1)
        let mebibytes = Double(bytes) / Double(1 << 20)
        guard let cp = Shell.which("cp") else { return .failed(name, unit: "MiB/s", "cp is not installed") }
        do {
            var ours: [Double] = [], sinceFirstWrite: [Double] = [], cpTimes: [Double] = [], cpSync: [Double] = []
            var ratios: [Double] = [], syncRatios: [Double] = []
            for round in 0..<runs {
                var pair: (ours: Double, cp: Double, cpSync: Double) = (0, 0, 0)
                for tool in rotated(["nimbusd", "cp"], by: round) {
                    if tool == "cp" {
                        // The same conditions as the daemon's: a file just written (its pages
                        // still dirty), copied as soon as it is closed.
                        Shell.sync()
                        let source = workspace.fresh("upload-src") + ".bin"
                        let destination = workspace.fresh("upload-cp") + ".bin"
                        try writeBigFile(source, bytes: bytes, sync: false)
                        pair.cp = try Shell.check(cp, [source, destination]).seconds
                        pair.cpSync = pair.cp + Shell.sync()
                        cpTimes.append(pair.cp)
                        cpSync.append(pair.cpSync)
                        try? FileManager.default.removeItem(atPath: destination)
                        try? FileManager.default.removeItem(atPath: source)
                        continue
                    }
                    session.daemon.waitUntilIdle(quiet: 1, timeout: 180)
                    Shell.sync()
                    let path = try RelativePath(validating: "upload-\(round).bin")
                    let watch = try ArrivalWatch(root: session.cloud, daemon: session.daemon)
                    defer { watch.close() }
                    let started = Monotonic.now
                    let closed = try writeBigFile(session.local + "/" + path.description, bytes: bytes, sync: false)
                    guard let arrived = try watch.waitFor(path, size: bytes, timeout: 600) else {
                        throw BenchError("the 1 GiB file was not complete in the cloud within 600 s")
                    }
                    pair.ours = Double(arrived - closed) / 1e9
                    ours.append(pair.ours)
                    sinceFirstWrite.append(Double(arrived - started) / 1e9)
                }
                ratios.append(pair.cp / pair.ours)
                syncRatios.append(pair.cpSync / pair.ours)
                progress("upload round \(round + 1)/\(runs): nimbusd \(format(pair.ours)) s, cp \(format(pair.cp)) s, cp && sync \(format(pair.cpSync)) s")
            }
            let median = Stats.median(ours)!
            var figure = Figure(name: name, value: mebibytes / median, unit: "MiB/s")
            figure.compare = [("cp", mebibytes / Stats.median(cpTimes)!), ("cp && sync", mebibytes / Stats.median(cpSync)!)]
            figure.ratio = Stats.median(ratios)
            figure.ratioLabel = "to cp"
            figure.targets = [Target(subject: "ratio to cp", bound: .atLeast(0.9), actual: figure.ratio)]
            figure.runs = ours.map { mebibytes / $0 }
            figure.extra = [("seconds", median), ("from_first_write_s", Stats.median(sinceFirstWrite)!),
                            ("cp_seconds", Stats.median(cpTimes)!), ("cp_sync_seconds", Stats.median(cpSync)!),
                            ("ratio_to_cp_sync", Stats.median(syncRatios)!)]
            figure.note = "1 GiB written into the local folder while nimbusd runs: close() to complete in the cloud; "
                + "cp copies an equal file just written outside the synced folders, from its close (its own writeback not included; 'cp && sync' includes it)"
            return figure
        } catch {
            return .failed(name, unit: "MiB/s", "\(error)")
        }
    }
}
