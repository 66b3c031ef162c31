import Glibc
import NimbusSystem
import Testing
@testable import NimbusJournal

/// A new journal is made durable with three flushes instead of a compaction's four, and what
/// a crash while creating it leaves opens as a new journal, with no problem reported (issue 15).
@Suite struct JournalCreationTests {
    /// Each file is flushed before it gets its name (a crash never leaves a name on a torn
    /// header), and the directory once after both renames, before `open` returns (the first
    /// commit finds both names durable).
    @Test func eachFileIsFlushedBeforeItsNameAndTheDirectoryOnceAfterBoth() throws {
        try withTemporaryDirectory { directory in
            var events: [String] = []
            let faults = SyscallFaults(afterRename: { events.append("rename \($0)") },
                                       afterSync: { events.append("flush \(Self.lastComponent(of: $0))") })
            let journal = try faults.inject { try Journal.open(directory: directory.path) { _ in } }
            try journal.close()
            #expect(events == ["flush journal.snapshot.tmp", "flush journal.log.tmp", "rename journal.snapshot",
                               "rename journal.log", "flush \(directory.url.lastPathComponent)"])
        }
    }

    /// A crash before the directory's flush may leave either name alone (or both, or none).
    @Test(arguments: [snapshotFile, logFile])
    func whatACrashWhileCreatingLeavesOpensAsANewJournal(left: String) throws {
        try withTemporaryDirectory { directory in
            try Journal.open(directory: directory.path) { _ in }.close()
            try directory.remove(left == snapshotFile ? logFile : snapshotFile)

            let (journal, replayed) = try openJournal(directory)
            #expect(replayed.isEmpty)
            #expect(journal.recovery.problems.isEmpty && !journal.recovery.mayHaveLostCommittedRecords, "\(journal.recovery)")
            journal.append(put("a", "1"))
            try journal.commit()
            try journal.close()
            let (model, recovery) = try reopenedModel(directory)
            #expect(model.entries == [bytes("a"): bytes("1")])
            #expect(recovery.problems.isEmpty, "\(recovery)")
        }
    }

    /// The name a descriptor was opened with, as /proc tells it.
    private static func lastComponent(of descriptor: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/fd/\(descriptor)", &buffer, buffer.count - 1)
        guard count > 0 else { return "descriptor \(descriptor)" }
        let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return String(path.split(separator: "/").last ?? "")
    }
}
