import Testing
@testable import NimbusJournal

@Suite struct JournalTests {
    @Test func createsMissingDirectoriesAndAnEmptyJournal() throws {
        try withTemporaryDirectory { root in
            let directory = root.subdirectory("state/nimbus/default")
            let (journal, replayed) = try openJournal(directory)
            #expect(replayed.isEmpty)
            #expect(journal.recovery.createdNew)
            #expect(!journal.recovery.mayHaveLostCommittedRecords)
            try journal.close()
            #expect(try directory.fileNames() == [logFile], "a new journal is its first log alone")
            let (model, recovery) = try reopenedModel(directory)
            #expect(model.entries.isEmpty)
            #expect(!recovery.createdNew && recovery.problems.isEmpty && recovery.bytesTruncated == 0)
        }
    }

    @Test func reopenHoldsExactlyWhatWasCommitted() throws {
        try withTemporaryDirectory { directory in
            let groups: [[JournalRecord]] = [
                [put("a", "1"), put("b", "2"), put("c", "3")],
                [put("a", "1 again"), remove("b")],
                [remove("missing"), put("b", "back"), .put(key: [0xFF, 0, 0x2F], value: [])],
                [remove("c")],
            ]
            try writeJournal(directory, groups: groups)
            var expected = Model()
            groups.joined().forEach { expected.apply($0) }

            let (journal, replayed) = try openJournal(directory)
            #expect(replayed == Array(groups.joined()))
            #expect(journal.recovery.logRecords == 9 && journal.recovery.bytesTruncated == 0)
            try journal.close()
            let (model, _) = try reopenedModel(directory)
            #expect(model == expected)
            #expect(model.entries == [bytes("a"): bytes("1 again"), bytes("b"): bytes("back"), [0xFF, 0, 0x2F]: []])
        }
    }

    @Test func openSaysHowManyRecordsToExpectBeforeReplayingThem() throws {
        try withTemporaryDirectory { directory in
            try writeJournal(directory, groups: [[put("a", "1"), put("b", "2")], [remove("a")]])
            var expected: [Int] = []
            var replayedBefore = -1
            var replayed = 0
            let journal = try Journal.open(directory: directory.path, expecting: { count in
                expected.append(count)
                replayedBefore = replayed
            }) { _ in replayed += 1 }
            try journal.close()
            #expect(expected == [3] && replayedBefore == 0 && replayed == 3)
        }
    }

    @Test func uncommittedAppendsAreGoneAfterReopen() throws {
        try withTemporaryDirectory { directory in
            let journal = try Journal.open(directory: directory.path) { _ in }
            journal.append(put("kept", "1"))
            try journal.commit()
            journal.append(put("lost", "2"))
            journal.append(remove("kept"))
            try journal.close()
            let (model, _) = try reopenedModel(directory)
            #expect(model.entries == [bytes("kept"): bytes("1")])
        }
    }

    @Test func commitWithNothingBufferedWritesNothing() throws {
        try withTemporaryDirectory { directory in
            let journal = try Journal.open(directory: directory.path) { _ in }
            journal.append(put("a", "1"))
            try journal.commit()
            let size = try directory.read(logFile).count
            try journal.commit()
            #expect(try directory.read(logFile).count == size)
            try journal.close()
            #expect(throws: JournalError.closed) {
                journal.append(put("b", "2"))
                try journal.commit()
            }
        }
    }

    @Test func aSecondOpenIsRefusedWhileTheFirstHoldsTheLock() throws {
        try withTemporaryDirectory { directory in
            let first = try Journal.open(directory: directory.path) { _ in }
            #expect(throws: JournalError.locked(directory.path)) {
                try Journal.open(directory: directory.path, lockWait: .milliseconds(50)) { _ in }
            }
            try first.close()
            try Journal.open(directory: directory.path) { _ in }.close()
        }
    }

    @Test func compactionKeepsTheContentAndStartsANewGeneration() throws {
        try withTemporaryDirectory { directory in
            var model = Model()
            let journal = try Journal.open(directory: directory.path) { _ in }
            for round in 0..<30 {
                for index in 0..<100 {
                    let record = index % 7 == 3 ? remove("key\(index)") : put("key\(index)", "value \(round)")
                    model.apply(record)
                    journal.append(record)
                }
                try journal.commit()
            }
            // Appended but not committed: the live entries include it, so compaction keeps it.
            let pending = put("pending", "x")
            model.apply(pending)
            journal.append(pending)
            let generation = journal.generation
            try journal.compact(liveEntries: model.liveEntries)
            #expect(journal.generation == generation + 1)
            #expect(try directory.read(logFile).count == FileHeader.size)
            try journal.commit()  // nothing left buffered: the pending put is in the snapshot
            #expect(try directory.read(logFile).count == FileHeader.size)

            let after = put("after", "compaction")
            model.apply(after)
            journal.append(after)
            try journal.commit()
            try journal.close()

            let (reopened, recovery) = try reopenedModel(directory)
            #expect(reopened == model)
            #expect(recovery.snapshotRecords == model.entries.count - 1 && recovery.logRecords == 1)
            #expect(recovery.problems.isEmpty && !recovery.staleLogDiscarded)
        }
    }

    @Test func needsCompactionOnceTheLogOutgrowsTheSnapshotAndTheFloor() throws {
        try withTemporaryDirectory { directory in
            var model = Model()
            let journal = try Journal.open(directory: directory.path) { _ in }
            let value = [UInt8](repeating: 0x5A, count: 100)
            var index = 0
            while !journal.needsCompaction {
                for _ in 0..<1_000 {
                    let record = JournalRecord.put(key: bytes("some/path/\(index % 5_000)"), value: value)
                    model.apply(record)
                    journal.append(record)
                    index += 1
                }
                try journal.commit()
            }
            #expect(journal.logSize > Journal.compactionFloor)
            try journal.compact(liveEntries: model.liveEntries)
            #expect(!journal.needsCompaction)
            try journal.close()
            #expect(try reopenedModel(directory).model == model)
        }
    }
}
