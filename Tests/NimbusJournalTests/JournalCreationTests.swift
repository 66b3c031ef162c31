import Glibc
import NimbusSystem
import Testing
@testable import NimbusJournal

/// A new journal is its first log alone and costs no flush until its first commit, which
/// flushes the log and the directory once; what a crash before that commit leaves opens as a
/// new journal, with no problem reported (issue 15: three flushes before a first sync's copy).
@Suite struct JournalCreationTests {
    @Test func creatingFlushesNothingAndTheFirstCommitFlushesTheLogThenTheDirectoryOnce() throws {
        try withTemporaryDirectory { directory in
            var events: [String] = []
            let faults = SyscallFaults(afterRename: { events.append("rename \($0)") },
                                       afterSync: { events.append("flush \(Self.lastComponent(of: $0))") })
            let journal = try faults.inject { try Journal.open(directory: directory.path) { _ in } }
            #expect(events == [], "opening a new journal")
            for round in 1...2 {
                events = []
                journal.append(put("round", "\(round)"))
                try faults.inject { try journal.commit() }
                let expected = ["flush \(logFile)"] + (round == 1 ? ["flush \(directory.url.lastPathComponent)"] : [])
                #expect(events == expected, "commit \(round)")
            }
            try journal.close()
            #expect(try reopenedModel(directory).model.entries == [bytes("round"): bytes("2")])
        }
    }

    /// A journal folder created with its parents is only as durable as their entries: on a
    /// filesystem that does not order directory creation (xfs, btrfs) a crash could lose the
    /// whole journal. Each parent of a folder created is flushed once, by the first commit,
    /// after the log and its directory and before the commit returns (not at the start, where
    /// a first sync would wait for it before its first copy); an existing tree costs no flush.
    @Test func theFirstCommitFlushesEachNewParentOnceAndAnExistingTreeNothing() throws {
        try withTemporaryDirectory { directory in
            let base = directory.url.resolvingSymlinksInPath().path
            var flushed: [String] = []
            let faults = SyscallFaults(afterSync: { flushed.append(Self.openedPath(of: $0)) })
            let folder = directory.path.appending("state/nimbus/journal")
            let journal = try faults.inject { try Journal.open(directory: folder) { _ in } }
            #expect(flushed == [], "creating state/nimbus/journal")
            for round in 1...2 {
                flushed = []
                journal.append(put("round", "\(round)"))
                try faults.inject { try journal.commit() }
                let created = [base, base + "/state", base + "/state/nimbus"]
                let log = base + "/state/nimbus/journal/" + logFile
                #expect(flushed == (round == 1 ? [log, base + "/state/nimbus/journal"] + created : [log]), "commit \(round)")
            }
            try journal.close()

            flushed = []
            let reopened = try faults.inject { try Journal.open(directory: folder) { _ in } }
            reopened.append(put("round", "3"))
            try faults.inject { try reopened.commit() }
            try reopened.close()
            // A first log alone flushes its directory again after a reopen (`isFirstLogAlone`), not the folders above.
            #expect(flushed == [base + "/state/nimbus/journal/" + logFile, base + "/state/nimbus/journal"],
                    "a commit in the existing journal folder")
        }
    }

    /// A note written before any commit makes the new folders durable first: it is durable
    /// when `writeNote` returns, and so must be the folder it is in.
    @Test func aNoteBeforeTheFirstCommitFlushesTheNewParentsFirst() throws {
        try withTemporaryDirectory { directory in
            let base = directory.url.resolvingSymlinksInPath().path
            var flushed: [String] = []
            let faults = SyscallFaults(afterSync: { flushed.append(Self.openedPath(of: $0)) })
            let journal = try Journal.open(directory: directory.path.appending("state/journal")) { _ in }
            try faults.inject { try journal.writeNote("note", Array("x".utf8)) }
            #expect(Array(flushed.prefix(2)) == [base, base + "/state"], "the folders first: \(flushed)")
            #expect(flushed.last == base + "/state/journal", "the note's rename last: \(flushed)")
            try journal.close()
        }
    }

    /// `makeDirectories` says which folders it created, outermost first, and a trailing slash
    /// names the same folder; `syncParents(of:)` flushes the parent of each.
    @Test func madeFoldersAreListedAndTheirParentsFlushed() throws {
        try withTemporaryDirectory { directory in
            let base = directory.url.resolvingSymlinksInPath().path
            let made = try makeDirectories(directory.path.appending("a/b/"))
            #expect(made == [directory.path.appending("a"), directory.path.appending("a/b")])
            var flushed: [String] = []
            let faults = SyscallFaults(afterSync: { flushed.append(Self.openedPath(of: $0)) })
            try faults.inject { try syncParents(of: made) }
            #expect(flushed == [base, base + "/a"])
            #expect(try makeDirectories(directory.path.appending("a/b")) == [], "creating a/b again")
        }
    }

    /// What a crash before the first commit may leave, in the directory of a new journal
    /// (nothing of it was flushed), and what an older Nimbus left, which made a snapshot too.
    static let leftByCreating: [(name: String, snapshot: [UInt8]?, log: [UInt8]?)] = [
        ("no file", nil, nil),
        ("an empty log", nil, []),
        ("a log header cut short", nil, Array(FileHeader.encode(.log, generation: 1).prefix(10))),
        ("a log header of zeros", nil, [UInt8](repeating: 0, count: FileHeader.size)),
        ("a whole log header (or an older Nimbus's log alone)", nil, FileHeader.encode(.log, generation: 1)),
        ("an older Nimbus's snapshot alone", FileHeader.encode(.snapshot, generation: 1), nil),
        ("an older Nimbus's new journal", FileHeader.encode(.snapshot, generation: 1), FileHeader.encode(.log, generation: 1)),
    ]

    @Test(arguments: leftByCreating.indices)
    func whatACrashWhileCreatingLeavesOpensAsANewJournal(case index: Int) throws {
        let (name, snapshot, log) = Self.leftByCreating[index]
        try withTemporaryDirectory { directory in
            if let snapshot { try directory.write(snapshot, to: snapshotFile) }
            if let log { try directory.write(log, to: logFile) }

            let (journal, replayed) = try openJournal(directory)
            #expect(replayed.isEmpty, "\(name)")
            #expect(journal.recovery.problems.isEmpty && !journal.recovery.mayHaveLostCommittedRecords, "\(name): \(journal.recovery)")
            journal.append(put("a", "1"))
            try journal.commit()
            try journal.close()
            let (model, recovery) = try reopenedModel(directory)
            #expect(model.entries == [bytes("a"): bytes("1")], "\(name)")
            #expect(recovery.problems.isEmpty, "\(name): \(recovery)")
        }
    }

    /// A journal that never compacted has no snapshot file: its log is replayed whole, with
    /// nothing reported, and its first compaction writes the snapshot.
    @Test func aFirstLogAloneIsReplayedAndItsFirstCompactionWritesTheSnapshot() throws {
        try withTemporaryDirectory { directory in
            try writeJournal(directory, groups: [[put("a", "1"), put("b", "2")], [remove("a")]])
            #expect(try directory.fileNames() == [logFile])
            let (journal, replayed) = try openJournal(directory)
            #expect(replayed == [put("a", "1"), put("b", "2"), remove("a")])
            #expect(journal.recovery.problems.isEmpty && !journal.recovery.mayHaveLostCommittedRecords, "\(journal.recovery)")
            try journal.compact(liveEntries: [(key: bytes("b"), value: bytes("2"))])
            try journal.close()
            #expect(try directory.fileNames() == [snapshotFile, logFile])
            let (model, recovery) = try reopenedModel(directory)
            #expect(model.entries == [bytes("b"): bytes("2")])
            #expect(recovery.generation == 2 && recovery.problems.isEmpty, "\(recovery)")
        }
    }

    /// A log of a later generation found alone lost its snapshot, which held records: that is
    /// damage, reported, not a new journal.
    @Test func aLaterLogAloneIsReportedAsASnapshotLost() throws {
        try withTemporaryDirectory { directory in
            let journal = try Journal.open(directory: directory.path) { _ in }
            try journal.compact(liveEntries: [(key: bytes("a"), value: bytes("1"))])
            try journal.close()
            try directory.remove(snapshotFile)
            let (model, recovery) = try reopenedModel(directory)
            #expect(model.entries.isEmpty)
            #expect(recovery.snapshotDamaged && recovery.mayHaveLostCommittedRecords, "\(recovery)")
        }
    }

    /// The last component of the path a descriptor was opened with.
    private static func lastComponent(of descriptor: Int32) -> String {
        String(openedPath(of: descriptor).split(separator: "/").last ?? "")
    }

    /// The path a descriptor was opened with, as /proc tells it.
    private static func openedPath(of descriptor: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/fd/\(descriptor)", &buffer, buffer.count - 1)
        guard count > 0 else { return "descriptor \(descriptor)" }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
