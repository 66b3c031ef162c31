import Foundation
import NimbusSystem
import Testing
@testable import NimbusJournal
import NimbusTestSupport

/// A fresh directory under the system's temporary directory; `withTemporaryDirectory`
/// removes it afterwards.
struct TemporaryDirectory {
    let url: URL

    var path: SystemPath { SystemPath(url.path) }

    func subdirectory(_ name: String) -> TemporaryDirectory {
        TemporaryDirectory(url: url.appendingPathComponent(name))
    }

    func read(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: url.appendingPathComponent(name)))
    }

    func write(_ bytes: some Sequence<UInt8>, to name: String) throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        try Data(bytes).write(to: url.appendingPathComponent(name))
    }

    func remove(_ name: String) throws {
        try FileManager.default.removeItem(at: url.appendingPathComponent(name))
    }

    func fileNames() throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: url.path))
    }
}

func withTemporaryDirectory<R>(_ body: (TemporaryDirectory) throws -> R) throws -> R {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-journal-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(TemporaryDirectory(url: url))
}

let snapshotFile = "journal.snapshot"
let logFile = "journal.log"

extension TemporaryDirectory {
    /// The snapshot's bytes; a journal that never compacted has no snapshot file, and its
    /// snapshot is the empty one of generation 1.
    func snapshotBytes() throws -> [UInt8] {
        try fileNames().contains(snapshotFile) ? read(snapshotFile) : FileHeader.encode(.snapshot, generation: 1)
    }
}

/// The map a journal's owner keeps, rebuilt from the records it is given.
struct Model: Equatable {
    var entries: [[UInt8]: [UInt8]] = [:]

    mutating func apply(_ record: JournalRecord) {
        switch record {
        case let .put(key, value): entries[key] = value
        case let .remove(key): entries[key] = nil
        }
    }

    var liveEntries: [(key: [UInt8], value: [UInt8])] {
        entries.map { (key: $0.key, value: $0.value) }
    }
}

/// Opens the journal in `directory`, collecting the replayed records in order.
func openJournal(_ directory: TemporaryDirectory) throws -> (journal: Journal, replayed: [JournalRecord]) {
    var replayed: [JournalRecord] = []
    let journal = try Journal.open(directory: directory.path) { replayed.append($0) }
    return (journal, replayed)
}

/// Opens, replays into a model, closes: what a restart would see.
func reopenedModel(_ directory: TemporaryDirectory) throws -> (model: Model, recovery: RecoveryReport) {
    var model = Model()
    let journal = try Journal.open(directory: directory.path) { model.apply($0) }
    defer { try? journal.close() }
    return (model, journal.recovery)
}

/// Writes `records` to a new journal, committing after each group, and closes it.
func writeJournal(_ directory: TemporaryDirectory, groups: [[JournalRecord]]) throws {
    let journal = try Journal.open(directory: directory.path) { _ in }
    for group in groups {
        for record in group { journal.append(record) }
        try journal.commit()
    }
    try journal.close()
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

func put(_ key: String, _ value: String) -> JournalRecord { .put(key: bytes(key), value: bytes(value)) }
func remove(_ key: String) -> JournalRecord { .remove(key: bytes(key)) }

/// Where each record starts and ends in the concatenation of their encodings, from `base`.
func recordBoundaries(_ records: [JournalRecord], base: Int) -> [Range<Int>] {
    var start = base
    return records.map { record in
        let end = start + RecordFormat.encode([record]).count
        defer { start = end }
        return start..<end
    }
}

/// Thrown by a test's hook to stop a compaction at one of its steps, as a crash would (not
/// NimbusSimulation's `SimulatedCrash`, which a crashed `FaultyFileSystem` throws).
struct CompactionCrash: Error {}
