import Foundation
import NimbusSystem
import NimbusVocabulary

/// `scan.files` (the daemon's scanner against find) and `copy.512m` (the daemon's durable
/// copier against cp), issue #2.
struct ScanCopyFigures {
    let options: BenchOptions
    let workspace: Workspace

    func run(into report: inout Report) {
        if options.wants("scan.files") { report.figures.append(scan()) }
        if options.wants("copy.512m") { report.figures.append(copy()) }
    }

    func scan() -> Figure {
        let name = "scan.files"
        let files = options.scanFiles
        let runs = options.runs(full: 5, quick: 3)
        guard let find = Shell.which("find") else { return .failed(name, unit: "files/s", "find is not installed") }
        do {
            let tree = try workspace.sourceTree(files: files)
            var ours: [Double] = [], theirs: [Double] = [], ratios: [Double] = []
            var entries = 0
            for round in 0..<runs {
                var pair: (ours: Double, find: Double) = (0, 0)
                for tool in rotated(["ours", "find"], by: round) {
                    Shell.sync()
                    if tool == "ours" {
                        pair.ours = try Monotonic.seconds {
                            let result = try DiskFileSystem(root: SystemPath(tree)).scan(.root) { _ in true }
                            entries = result.entries.count
                        }
                    } else {
                        pair.find = try Shell.check(find, [tree, "-printf", "%s %T@\\n"], discardOutput: true).seconds
                    }
                }
                ours.append(pair.ours)
                theirs.append(pair.find)
                ratios.append(pair.find / pair.ours)
            }
            guard entries == files + files / 100 else {
                throw BenchError("the scan found \(entries) entries, expected \(files + files / 100)")
            }
            let median = Stats.median(ours)!
            var figure = Figure(name: name, value: Double(files) / median, unit: "files/s")
            figure.compare = [("find -printf", Double(files) / Stats.median(theirs)!)]
            figure.ratio = Stats.median(ratios)
            figure.ratioLabel = "to find"
            figure.runs = ours.map { Double(files) / $0 }
            figure.extra = [("seconds", median), ("find_seconds", Stats.median(theirs)!), ("files", Double(files))]
            figure.note = "\(files) files in \(files / 100) folders, warm cache; DiskFileSystem.scan vs find DIR -printf '%s %T@\\n' > /dev/null; ratio > 1 = faster than find"
            return figure
        } catch {
            return .failed(name, unit: "files/s", "\(error)")
        }
    }

    /// The daemon's copier (temporary file, copy, fsync, rename, directory fsync) against cp
    /// of the same file; cp's own writeback (the `sync` right after it) is timed too.
    func copy() -> Figure {
        let name = "copy.512m"
        let bytes = options.copyBytes
        let runs = options.runs(full: 5, quick: 3)
        let mebibytes = Double(bytes) / Double(1 << 20)
        guard let cp = Shell.which("cp") else { return .failed(name, unit: "MiB/s", "cp is not installed") }
        do {
            let sourceRoot = try workspace.freshDirectory("copy-src")
            let destinationRoot = try workspace.freshDirectory("copy-dst")
            try writeBigFile(sourceRoot + "/source.bin", bytes: bytes, sync: true)
            let source = try RelativePath(validating: "source.bin")
            let sourceSystem = DiskFileSystem(root: SystemPath(sourceRoot))
            let destinationSystem = DiskFileSystem(root: SystemPath(destinationRoot))
            var ours: [Double] = [], cpSeconds: [Double] = [], cpSync: [Double] = []
            var ratios: [Double] = [], syncRatios: [Double] = []
            for round in 0..<runs {
                var pair: (ours: Double, cp: Double, cpSync: Double) = (0, 0, 0)
                for tool in rotated(["ours", "cp"], by: round) {
                    Shell.sync()
                    if tool == "ours" {
                        let target = try RelativePath(validating: "ours-\(round).bin")
                        guard let expected = try sourceSystem.metadata(of: source) else { throw BenchError("source vanished") }
                        pair.ours = try Monotonic.seconds {
                            let prepared = try destinationSystem.prepareCopy(of: source, from: sourceSystem, expected: expected,
                                                                             durable: true, progress: { _ in })
                            _ = try destinationSystem.install(prepared, at: target, replacing: nil, displacedTo: nil, durable: true)
                        }
                        guard fileSize(destinationRoot + "/" + target.description) == bytes else { throw BenchError("our copy is incomplete") }
                        try? FileManager.default.removeItem(atPath: destinationRoot + "/" + target.description)
                    } else {
                        let target = destinationRoot + "/cp-\(round).bin"
                        pair.cp = try Shell.check(cp, [sourceRoot + "/source.bin", target]).seconds
                        pair.cpSync = pair.cp + Shell.sync()
                        try? FileManager.default.removeItem(atPath: target)
                    }
                }
                ours.append(pair.ours)
                cpSeconds.append(pair.cp)
                cpSync.append(pair.cpSync)
                ratios.append(pair.cp / pair.ours)
                syncRatios.append(pair.cpSync / pair.ours)
            }
            Shell.remove(sourceRoot)
            Shell.remove(destinationRoot)
            let median = Stats.median(ours)!
            var figure = Figure(name: name, value: mebibytes / median, unit: "MiB/s")
            figure.compare = [("cp", mebibytes / Stats.median(cpSeconds)!), ("cp && sync", mebibytes / Stats.median(cpSync)!)]
            figure.ratio = Stats.median(ratios)
            figure.ratioLabel = "to cp"
            figure.targets = [Target(subject: "ratio to cp", bound: .atLeast(0.9), actual: figure.ratio)]
            figure.runs = ours.map { mebibytes / $0 }
            figure.extra = [("seconds", median), ("cp_seconds", Stats.median(cpSeconds)!), ("cp_sync_seconds", Stats.median(cpSync)!),
                            ("ratio_to_cp_sync", Stats.median(syncRatios)!), ("mebibytes", mebibytes)]
            figure.note = "\(Int(mebibytes)) MiB; DiskFileSystem.prepareCopy + install, durable (fsync file + directory); "
                + "cp leaves the data in the page cache, 'cp && sync' adds its writeback; ratio = median of per-round ratios"
            return figure
        } catch {
            return .failed(name, unit: "MiB/s", "\(error)")
        }
    }
}

/// Writes `bytes` of pseudo-random data in 1 MiB writes; fsyncs it when asked. Returns the
/// monotonic time just before the close.
@discardableResult
func writeBigFile(_ path: String, bytes: Int64, sync: Bool) throws -> Int64 {
    let chunkSize = 1 << 20
    var content = Content(seed: UInt64(bitPattern: Int64(path.hashValue)))
    let chunk = content.next(size: chunkSize)
    let file = try FileDescriptor.open(SystemPath(path), [.writeOnly, .create, .truncate], permissions: 0o644)
    do {
        var written: Int64 = 0
        var stamped = chunk
        while written < bytes {
            // A different first word per chunk, so no two chunks are equal.
            withUnsafeBytes(of: written) { word in for index in 0..<8 { stamped[index] = word[index] } }
            let count = Int(min(Int64(chunkSize), bytes - written))
            try stamped.withUnsafeBytes { try file.writeAll(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            written += Int64(count)
        }
        if sync { try file.sync() }
    } catch {
        try? file.close()
        throw error
    }
    let beforeClose = Monotonic.now
    try file.close()
    return beforeClose
}
