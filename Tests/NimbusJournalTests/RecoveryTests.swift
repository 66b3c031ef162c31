import Testing
@testable import NimbusJournal
import NimbusTestSupport

/// Damage on real files: torn tails, flipped bits, garbage, missing files.
@Suite struct RecoveryTests {
    static let groups: [[JournalRecord]] = [
        [put("alpha", "1"), put("beta", "2"), put("gamma", "3")],
        [put("alpha", "4"), remove("beta")],
        [put("delta", "5"), remove("gamma"), put("beta", "6")],
    ]
    static var records: [JournalRecord] { Array(groups.joined()) }

    /// The journal written by `groups`, then `damage` applied to the log bytes; opens it
    /// in a subdirectory and checks that exactly `records.prefix(kept)` is replayed and
    /// that the journal keeps working.
    static func checkRecovery(log: [UInt8], snapshot: [UInt8], in root: TemporaryDirectory, case name: String,
                              keeps kept: Int, truncatedAt validEnd: Int, _ comment: Comment) throws {
        let directory = root.subdirectory(name)
        try directory.write(snapshot, to: snapshotFile)
        try directory.write(log, to: logFile)

        let (journal, replayed) = try openJournal(directory)
        #expect(replayed == Array(records.prefix(kept)), comment)
        #expect(journal.recovery.bytesTruncated == Int64(log.count - validEnd), comment)
        #expect(try directory.read(logFile).count == validEnd, comment)
        journal.append(put("new", "record"))
        try journal.commit()
        try journal.close()

        let (_, again) = try openJournal(directory)
        #expect(again == Array(records.prefix(kept)) + [put("new", "record")], comment)
    }

    @Test func cuttingTheLogAtEveryOffsetOfTheLastRecords() throws {
        try withTemporaryDirectory { root in
            try writeJournal(root, groups: Self.groups)
            let log = try root.read(logFile), snapshot = try root.snapshotBytes()
            let boundaries = recordBoundaries(Self.records, base: FileHeader.size)
            #expect(boundaries.last?.upperBound == log.count)
            for cut in boundaries[boundaries.count - 3].lowerBound...log.count {
                let kept = boundaries.filter { $0.upperBound <= cut }.count
                try Self.checkRecovery(log: Array(log[..<cut]), snapshot: snapshot, in: root, case: "cut\(cut)",
                                       keeps: kept, truncatedAt: boundaries[kept - 1].upperBound, "cut at \(cut)")
            }
        }
    }

    @Test func flippedBitsDropTheirRecordAndEverythingAfter() throws {
        let seed = SeededRandom.seed(for: "flippedBits")
        var generator = SeededRandom(seed: seed)
        try withTemporaryDirectory { root in
            try writeJournal(root, groups: Self.groups)
            let log = try root.read(logFile), snapshot = try root.snapshotBytes()
            let boundaries = recordBoundaries(Self.records, base: FileHeader.size)
            let region = boundaries[boundaries.count - 3].lowerBound..<log.count
            for round in 0..<40 {
                let byte = Int.random(in: region, using: &generator), bit = Int.random(in: 0..<8, using: &generator)
                var damaged = log
                damaged[byte] ^= 1 << bit
                let hit = boundaries.firstIndex { $0.contains(byte) }!
                try Self.checkRecovery(log: damaged, snapshot: snapshot, in: root, case: "flip\(round)", keeps: hit,
                                       truncatedAt: boundaries[hit].lowerBound,
                                       "seed \(seed): bit \(bit) of byte \(byte)")
            }
        }
    }

    @Test func garbageAndHugeLengthsAfterTheLastRecord() throws {
        let seed = SeededRandom.seed(for: "garbageTail")
        var generator = SeededRandom(seed: seed)
        try withTemporaryDirectory { root in
            try writeJournal(root, groups: Self.groups)
            let log = try root.read(logFile), snapshot = try root.snapshotBytes()
            let tails: [[UInt8]] = [
                [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 1],
                [0xFF, 0xFF, 0xFF, 0x7F] + [UInt8](repeating: 0xAA, count: 12),
                [0, 0, 0, 1] + [UInt8](repeating: 0, count: 20),  // 16 MiB claimed, 20 bytes there
                [UInt8](repeating: 0, count: 4096),  // a zero-filled block, as a crash can leave
                generator.bytes(1000),
            ]
            for (index, tail) in tails.enumerated() {
                try Self.checkRecovery(log: log + tail, snapshot: snapshot, in: root, case: "tail\(index)",
                                       keeps: Self.records.count, truncatedAt: log.count, "seed \(seed): tail \(index)")
            }
        }
    }

    @Test func aDamagedSnapshotRecordKeepsWhatPrecedesItAndIsRewritten() throws {
        try withTemporaryDirectory { directory in
            let entries = (0..<10).map { (key: bytes("key\($0)"), value: bytes("value\($0)")) }
            let journal = try Journal.open(directory: directory.path) { _ in }
            try journal.compact(liveEntries: entries)
            journal.append(put("logged", "after"))
            try journal.commit()
            try journal.close()

            var snapshot = try directory.read(snapshotFile)
            let boundaries = recordBoundaries(entries.map { .put(key: $0.key, value: $0.value) }, base: FileHeader.size)
            snapshot[boundaries[6].lowerBound + 10] ^= 0x04
            try directory.write(snapshot, to: snapshotFile)

            let (first, recovery) = try reopenedModel(directory)
            #expect(recovery.snapshotDamaged && recovery.mayHaveLostCommittedRecords)
            #expect(recovery.snapshotRecords == 6 && recovery.logRecords == 1)
            #expect(recovery.bytesTruncated == Int64(snapshot.count - boundaries[6].lowerBound))
            var expected = Model()
            entries.prefix(6).forEach { expected.apply(.put(key: $0.key, value: $0.value)) }
            expected.apply(put("logged", "after"))
            #expect(first == expected)

            let (second, clean) = try reopenedModel(directory)
            #expect(second == expected)
            #expect(clean.problems.isEmpty && !clean.snapshotDamaged && clean.generation == recovery.generation)
        }
    }

    @Test func unreadableFilesNeverPreventStarting() throws {
        let seed = SeededRandom.seed(for: "unreadableFiles")
        var generator = SeededRandom(seed: seed)
        try withTemporaryDirectory { root in
            try writeJournal(root, groups: Self.groups)
            let log = try root.read(logFile), snapshot = try root.snapshotBytes()
            var badHeader = snapshot
            badHeader[3] ^= 0x01
            // Every committed record is in the log, so each case loses them all, except a
            // missing snapshot: the first log alone is a journal that never compacted.
            let cases: [(name: String, snapshot: [UInt8]?, log: [UInt8]?)] = [
                ("snapshot header damaged", badHeader, log),
                ("snapshot empty", [], log),
                ("snapshot garbage", generator.bytes(500), log),
                ("log header damaged", snapshot, [0] + log.dropFirst()),
                ("log empty", snapshot, []),
                ("log garbage", snapshot, generator.bytes(500)),
                ("log missing", snapshot, nil),
            ]
            for (index, damage) in cases.enumerated() {
                let directory = root.subdirectory("case\(index)")
                if let bytes = damage.snapshot { try directory.write(bytes, to: snapshotFile) }
                if let bytes = damage.log { try directory.write(bytes, to: logFile) }
                let (journal, replayed) = try openJournal(directory)
                #expect(replayed.isEmpty, "seed \(seed): \(damage.name)")
                #expect(journal.recovery.mayHaveLostCommittedRecords == (damage.log != nil), "\(damage.name)")
                journal.append(put("new", "record"))
                try journal.commit()
                try journal.close()
                let (model, recovery) = try reopenedModel(directory)
                #expect(model.entries == [bytes("new"): bytes("record")], "seed \(seed): \(damage.name)")
                #expect(recovery.problems.isEmpty, "seed \(seed): \(damage.name)")
            }
        }
    }

    @Test func aLogMissingAfterCompactionIsReported() throws {
        try withTemporaryDirectory { directory in
            let journal = try Journal.open(directory: directory.path) { _ in }
            try journal.compact(liveEntries: [(key: bytes("a"), value: bytes("1"))])
            journal.append(put("b", "2"))
            try journal.commit()
            try journal.close()
            try directory.remove(logFile)

            let (model, recovery) = try reopenedModel(directory)
            #expect(model.entries == [bytes("a"): bytes("1")])
            #expect(recovery.logUnreadable && recovery.mayHaveLostCommittedRecords)
            #expect(try reopenedModel(directory).recovery.problems.isEmpty)
        }
    }
}
