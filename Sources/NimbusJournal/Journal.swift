import NimbusSystem

/// A crash-safe, append-only key/value journal (DESIGN §6): a snapshot file plus a log file
/// in one directory. The owner keeps the map itself (the journal never holds it in memory):
/// `open` replays every record to a callback, and `compact` asks for the live entries.
///
/// Writes are buffered by `append` and become durable together at `commit` (one write, one
/// fdatasync). A crash during a commit may leave any prefix of its records durable; a crash
/// at any other moment loses nothing committed.
///
/// A new journal is its log of generation 1 alone, and costs no flush until its first commit
/// (see `create`); the first compaction writes the first snapshot file.
///
/// Compaction, and why a crash anywhere in it is safe. With snapshot S(g) and log L(g) of
/// generation g in place:
///  1. write S(g+1) to `journal.snapshot.tmp`, fsync it;
///  2. rename it over `journal.snapshot`;
///  3. fsync the directory (step 2 is durable);
///  4. write L(g+1), header only, to `journal.log.tmp`, fsync it;
///  5. rename it over `journal.log`, fsync the directory.
/// A restart before step 2 finds S(g) + L(g) (the stray temporary file is removed). After
/// step 2 it finds S(g+1) + L(g), or S(g) + L(g) if the rename was not yet durable: a log
/// is only replayed on a snapshot of its own generation, so L(g) — whose records are all in
/// S(g+1) — is discarded. Step 3 ensures L(g+1) can never be found next to S(g), where it
/// would be discarded with the commits made after compaction.
///
/// Who owns it: one thread at a time. In the daemon that is the engine thread: the engine's
/// `RecordStore` appends and commits there, and `PairRuntime.run` closes it there after the
/// loop ended. It is `@unchecked Sendable` only so that its owner may hand it between
/// isolation domains (it is opened on the thread that builds the runtime).
public final class Journal: @unchecked Sendable {
    /// Below this many log bytes, compaction is never worth its cost.
    static let compactionFloor: Int64 = 1 << 20

    public internal(set) var recovery = RecoveryReport()

    let directory: JournalDirectory
    /// The generation of the snapshot in place; the log in use has the same one.
    var generation: UInt64 = 0
    var snapshotSize: Int64 = 0
    /// The log being appended to. Nil after a compaction installed its snapshot but could
    /// not start the new log: the next commit starts it.
    var log: FileDescriptor?
    /// Bytes in the log (header and committed records); the next commit writes here.
    var logSize: Int64 = 0
    /// False while the log's name may not be durable: a new journal's log, created without a
    /// flush (see `create`). The next commit flushes the directory before it returns.
    var logNameIsDurable = true
    /// False while the folders the journal's directory was created in may not be durable
    /// (`JournalDirectory.created`): flushed before the first commit or note returns, so that a
    /// first start pays no flush before its first copy (issue 15).
    var foldersAreDurable: Bool
    private var pending = ByteWriter()
    private var isClosed = false

    init(directory: JournalDirectory) {
        self.directory = directory
        foldersAreDurable = directory.created.isEmpty
    }

    deinit {
        if !isClosed {
            try? log?.close()
            directory.close()
        }
    }

    /// Buffers `record`; it becomes durable at the next successful `commit`.
    /// A record is limited to `RecordFormat.maxRecordLength` bytes (16 MiB); a larger one
    /// is a programming error and traps.
    public func append(_ record: JournalRecord) {
        RecordFormat.encode(record, into: &pending)
    }

    /// Makes every buffered record durable with one write and one fdatasync (the first commit
    /// of a new journal also flushes the directory, for the log's name, and the folders created
    /// for it, for theirs); does nothing when nothing is buffered. When it throws, the records stay buffered and the next commit
    /// writes them again at the same place.
    public func commit() throws {
        guard !pending.isEmpty else { return }
        guard !isClosed else { throw JournalError.closed }
        let log = try self.log ?? startLog()
        let offset = logSize
        try directory.io("append to", JournalDirectory.logName) {
            try pending.bytes.withUnsafeBytes { try log.writeAll(toAbsoluteOffset: offset, $0) }
            try log.dataSync()
        }
        if !logNameIsDurable {
            try directory.synchronize()
            logNameIsDurable = true
        }
        try makeFoldersDurable()
        logSize += Int64(pending.count)
        pending.removeAllReleasingLargeRoom()
    }

    /// Flushes the parents of the folders created for the journal, once (`foldersAreDurable`).
    func makeFoldersDurable() throws {
        guard !foldersAreDurable else { return }
        try directory.syncCreatedFolders()
        foldersAreDurable = true
    }

    /// True when the log has grown past the snapshot (and past 1 MiB): time to `compact`.
    public var needsCompaction: Bool {
        logSize - Int64(FileHeader.size) > max(snapshotSize, Self.compactionFloor)
    }

    /// Replaces snapshot and log by a snapshot of `liveEntries` and an empty log.
    /// `liveEntries` must be the owner's current map, including the effect of every record
    /// appended so far, committed or not: they all become durable and the buffer is emptied.
    /// Keys should be unique (a repeated key keeps its last value).
    public func compact(liveEntries: some Sequence<(key: [UInt8], value: [UInt8])>) throws {
        try compact(liveEntries: liveEntries, afterStep: { _ in })
    }

    /// The points between compaction steps, where tests simulate a crash.
    enum CompactionStep: CaseIterable {
        case snapshotWritten, snapshotInstalled, logWritten
    }

    func compact(liveEntries: some Sequence<(key: [UInt8], value: [UInt8])>,
                 afterStep: (CompactionStep) throws -> Void) throws {
        guard !isClosed else { throw JournalError.closed }
        try makeFoldersDurable()
        let newGeneration = generation + 1
        let newSnapshotSize = try writeTemporarySnapshot(generation: newGeneration) { writer in
            for entry in liveEntries { try writer.write(.put(key: entry.key, value: entry.value)) }
        }
        try afterStep(.snapshotWritten)
        try directory.installTemporary(for: JournalDirectory.snapshotName)
        // From here a restart may find the new snapshot, which holds everything: the old
        // log and the buffer are obsolete, and nothing may be appended before a new log.
        generation = newGeneration
        snapshotSize = newSnapshotSize
        pending.removeAllReleasingLargeRoom()
        try? log?.close()
        log = nil
        logSize = Int64(FileHeader.size)
        try afterStep(.snapshotInstalled)
        try startLog(afterStep: afterStep)
    }

    /// Closes the files and releases the directory's lock. Records appended but not
    /// committed are discarded, as a crash would discard them.
    public func close() throws {
        guard !isClosed else { return }
        isClosed = true
        pending.removeAllReleasingLargeRoom()
        defer { directory.close() }
        if let log {
            self.log = nil
            try directory.io("close", JournalDirectory.logName) { try log.close() }
        }
    }

    /// Writes snapshot `generation` to its temporary file and fsyncs it; returns its size.
    /// `writeRecords` supplies the records.
    func writeTemporarySnapshot(generation: UInt64,
                                _ writeRecords: (inout ChunkedFileWriter) throws -> Void) throws -> Int64 {
        let file = try directory.writeTemporary(for: JournalDirectory.snapshotName) { file in
            var writer = ChunkedFileWriter(file)
            try writer.write(FileHeader.encode(.snapshot, generation: generation)[...])
            try writeRecords(&writer)
            try writer.flush()
        }
        return try file.closeAfter {
            try directory.io("stat", JournalDirectory.snapshotName) { try file.metadata().size }
        }
    }

    /// Writes an empty log of the current generation to its temporary file and fsyncs it;
    /// returns it open.
    func writeTemporaryLog() throws -> FileDescriptor {
        try directory.writeTemporary(for: JournalDirectory.logName) { file in
            try file.writeAll(FileHeader.encode(.log, generation: generation))
        }
    }

    /// Starts an empty log of the current generation, replacing whatever log is there.
    @discardableResult
    func startLog(afterStep: (CompactionStep) throws -> Void = { _ in }) throws -> FileDescriptor {
        // The snapshot of this generation must be durable before its log exists (see the
        // type's comment); fsyncing again is cheap when it already is.
        try directory.synchronize()
        let file = try writeTemporaryLog()
        do {
            try afterStep(.logWritten)
            try directory.installTemporary(for: JournalDirectory.logName)
            try directory.synchronize()
        } catch {
            try? file.close()
            throw error
        }
        log = file
        logSize = Int64(FileHeader.size)
        logNameIsDurable = true
        return file
    }
}
