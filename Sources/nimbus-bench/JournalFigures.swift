import Foundation
import NimbusCore
import NimbusDaemon
import NimbusSystem
import NimbusVocabulary

/// `journal.load` and `journal.append` (issue #2, DESIGN §6), on the daemon's own record
/// store: the keys are ~40-byte paths and the values the daemon's encoded `PathRecord`s.
struct JournalFigures {
    let options: BenchOptions
    let workspace: Workspace

    func run(into report: inout Report) {
        if options.wants("journal.append") { report.figures.append(append()) }
        if options.wants("journal.load") { report.figures.append(load()) }
    }

    /// A path like "home/photos/2024/album-0042/IMG_004217.jpg" (42 bytes).
    static func path(_ index: Int) -> RelativePath {
        let album = String(index / 100), photo = String(index)
        let text = "home/photos/2024/album-" + String(repeating: "0", count: max(0, 4 - album.count)) + album
            + "/IMG_" + String(repeating: "0", count: max(0, 6 - photo.count)) + photo + ".jpg"
        return try! RelativePath(validating: text)
    }

    /// A record as the engine writes it after syncing a file: both sides' metadata and a hash.
    static func record(_ index: Int) -> PathRecord {
        let i = Int64(index)
        let local = FileMetadata(kind: .file, size: 4096 + i % 1_000_000, mtime: 1_731_000_000_000_000_000 + i * 1_000_003,
                                 mode: 0o644, inode: UInt64(12_000_000 + index), device: 2049)
        var cloud = local
        cloud.inode = UInt64(48_000_000 + index)
        cloud.device = 2065
        let hash = ContentHash(value: UInt64(truncatingIfNeeded: i) &* 0x9E37_79B9_7F4A_7C15, size: local.size)
        return PathRecord(base: BaseEntry(local: local, cloud: cloud, hash: hash), lastOpened: WallInstant(nanoseconds: 1_731_000_000_000_000_000 + i))
    }

    private func entries() -> [(RelativePath, PathRecord)] {
        (0..<options.journalEntries).map { (Self.path($0), Self.record($0)) }
    }

    /// Appends every entry, committing (one write + one fdatasync) every 1 000.
    func append() -> Figure {
        let name = "journal.append"
        let count = options.journalEntries
        let runs = options.runs(full: 5, quick: 3)
        let entries = entries()
        var seconds: [Double] = []
        var bytesPerRecord = 0.0
        do {
            for _ in 0..<runs {
                let directory = workspace.fresh("journal-append")
                let (store, _) = try JournalRecordStore.open(directory: SystemPath(directory))
                Shell.sync()
                seconds.append(try Monotonic.seconds {
                    for (index, entry) in entries.enumerated() {
                        store.put(entry.0, entry.1)
                        if index % 1000 == 999 { try store.commit() }
                    }
                    try store.commit()
                })
                try store.close()
                bytesPerRecord = Double(fileSize(directory + "/journal.log")) / Double(count)
                Shell.remove(directory)
            }
        } catch {
            return .failed(name, unit: "records/s", "\(error)")
        }
        let median = Stats.median(seconds)!
        var figure = Figure(name: name, value: Double(count) / median, unit: "records/s")
        figure.runs = seconds.map { Double(count) / $0 }
        figure.extra = [("seconds", median), ("commits", Double(count / 1000)), ("log_bytes_per_record", bytesPerRecord)]
        figure.note = "\(count) PathRecords (~42-byte path keys) through JournalRecordStore, one commit (write + fdatasync) per 1 000"
        return figure
    }

    /// Opens a journal of `journalEntries` entries and rebuilds the daemon's map from it, as
    /// `nimbusd` does at start: once as a compacted snapshot, once as a bare log.
    func load() -> Figure {
        let name = "journal.load"
        let count = options.journalEntries
        let runs = options.runs(full: 5, quick: 3)
        do {
            let compacted = workspace.fresh("journal-snapshot")
            let logOnly = workspace.fresh("journal-log")
            let entries = entries()
            for (directory, compacts) in [(compacted, true), (logOnly, false)] {
                let (store, _) = try JournalRecordStore.open(directory: SystemPath(directory))
                for (path, record) in entries { store.put(path, record) }
                try store.commit()
                if compacts {
                    var all: [RelativePath: PathRecord] = [:]
                    for (path, record) in entries { all[path] = record }
                    try store.compactIfNeeded(Array(all))
                }
                try store.close()
            }
            var snapshotSeconds: [Double] = []
            var logSeconds: [Double] = []
            for round in 0..<runs {
                for (directory, isSnapshot) in rotated([(compacted, true), (logOnly, false)], by: round) {
                    Shell.sync()
                    var loaded = 0
                    var opened: JournalRecordStore?
                    let seconds = try Monotonic.seconds {
                        let (store, records) = try JournalRecordStore.open(directory: SystemPath(directory))
                        loaded = records.count
                        opened = store
                    }
                    try opened?.close()
                    guard loaded == count else { throw BenchError("loaded \(loaded) records of \(count)") }
                    if isSnapshot { snapshotSeconds.append(seconds) } else { logSeconds.append(seconds) }
                }
            }
            let snapshotBytes = fileSize(compacted + "/journal.snapshot")
            Shell.remove(compacted)
            Shell.remove(logOnly)
            let median = Stats.median(snapshotSeconds)!
            var figure = Figure(name: name, value: median, unit: "s")
            figure.targets = [Target(subject: "time", bound: .below(0.3), actual: median, unit: "s")]
            figure.runs = snapshotSeconds
            figure.extra = [("log_only_s", Stats.median(logSeconds)!), ("entries", Double(count)),
                            ("snapshot_bytes", Double(snapshotBytes))]
            figure.note = "open + replay into [RelativePath: PathRecord] (JournalRecordStore.open); value: compacted snapshot, log_only_s: the same entries as an uncompacted log"
            return figure
        } catch {
            return .failed(name, unit: "s", "\(error)")
        }
    }
}
