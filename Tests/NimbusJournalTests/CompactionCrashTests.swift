import Testing
@testable import NimbusJournal

/// Compaction interrupted between its steps, as by a crash or a failed system call.
@Suite struct CompactionCrashTests {
    /// A journal in `directory` with committed content (returned) and one earlier compaction.
    static func committedJournal(_ directory: TemporaryDirectory) throws -> (Journal, Model) {
        var model = Model()
        let journal = try Journal.open(directory: directory.path) { _ in }
        func commit(_ records: [JournalRecord]) throws {
            for record in records {
                model.apply(record)
                journal.append(record)
            }
            try journal.commit()
        }
        try commit((0..<50).map { put("old\($0)", "v\($0)") })
        try journal.compact(liveEntries: model.liveEntries)
        try commit((0..<50).map { $0 % 3 == 0 ? remove("old\($0)") : put("new\($0)", "w\($0)") })
        return (journal, model)
    }

    @Test(arguments: Journal.CompactionStep.allCases)
    func aCrashAfterAnyStepRecoversTheCommittedContent(step: Journal.CompactionStep) throws {
        try withTemporaryDirectory { directory in
            var (journal, model) = try Self.committedJournal(directory)
            #expect(throws: CompactionCrash.self) {
                try journal.compact(liveEntries: model.liveEntries) { if $0 == step { throw CompactionCrash() } }
            }
            try journal.close()  // the process dies: descriptors closed, nothing else done

            let (journalAfter, replayed) = try openJournal(directory)
            var recovered = Model()
            replayed.forEach { recovered.apply($0) }
            #expect(recovered == model)
            #expect(!journalAfter.recovery.mayHaveLostCommittedRecords)
            #expect(journalAfter.recovery.staleLogDiscarded == (step != .snapshotWritten))
            #expect(try directory.fileNames() == [snapshotFile, logFile], "temporary files are removed")

            journalAfter.append(put("later", "1"))
            model.apply(put("later", "1"))
            try journalAfter.commit()
            try journalAfter.close()
            journal = try Journal.open(directory: directory.path) { _ in }
            try journal.close()
            #expect(try reopenedModel(directory).model == model)
        }
    }

    @Test(arguments: [Journal.CompactionStep.snapshotInstalled, .logWritten])
    func aFailureAfterTheSnapshotIsInPlaceLetsTheNextCommitStartTheLog(step: Journal.CompactionStep) throws {
        try withTemporaryDirectory { directory in
            var (journal, model) = try Self.committedJournal(directory)
            #expect(throws: CompactionCrash.self) {
                try journal.compact(liveEntries: model.liveEntries) { if $0 == step { throw CompactionCrash() } }
            }
            // The same journal goes on: its next commit must land in a log of the new generation.
            journal.append(remove("new1"))
            model.apply(remove("new1"))
            try journal.commit()
            try journal.close()
            let (recovered, recovery) = try reopenedModel(directory)
            #expect(recovered == model)
            #expect(recovery.logRecords == 1 && !recovery.staleLogDiscarded)
            journal = try Journal.open(directory: directory.path) { _ in }
            try journal.close()
        }
    }

    @Test func aNewSnapshotNextToTheOldLogIgnoresThatLog() throws {
        try withTemporaryDirectory { directory in
            let (journal, model) = try Self.committedJournal(directory)
            let oldLog = try directory.read(logFile)
            try journal.compact(liveEntries: model.liveEntries)
            try journal.close()
            try directory.write(oldLog, to: logFile)

            let (recovered, recovery) = try reopenedModel(directory)
            #expect(recovered == model)
            #expect(recovery.staleLogDiscarded && recovery.logRecords == 0 && recovery.problems.isEmpty)
        }
    }

    @Test func strayTemporaryFilesAreRemoved() throws {
        try withTemporaryDirectory { directory in
            let (journal, model) = try Self.committedJournal(directory)
            try journal.close()
            try directory.write([1, 2, 3], to: snapshotFile + ".tmp")
            try directory.write(FileHeader.encode(.log, generation: 99), to: logFile + ".tmp")
            let (recovered, recovery) = try reopenedModel(directory)
            #expect(recovered == model && recovery.problems.isEmpty)
            #expect(try directory.fileNames() == [snapshotFile, logFile])
        }
    }
}
