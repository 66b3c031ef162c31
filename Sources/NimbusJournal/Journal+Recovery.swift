import NimbusSystem

extension Journal {
    /// How long `open` waits for a lock held elsewhere before it says the journal is in use.
    /// Another daemon holds it for as long as it runs; a lock let go within moments was a copy
    /// of a descriptor of this very process, held by a child between its fork and its exec
    /// (every descriptor is close-on-exec, but a fork copies them all, and an flock belongs to
    /// the open file they share): a journal closed and opened again while another thread starts
    /// a program found it "in use".
    public static let lockWait: Duration = .seconds(1)

    /// Opens the journal in `directory` (created with its files when missing), hands every
    /// record found to `replay` in order, and leaves the files clean for appending. Before
    /// the first record, `expecting` is told how many records there are at most, so the
    /// owner can make room for its map at once rather than grow it step by step.
    ///
    /// Never refuses to start because of damage: it replays what is valid, drops the rest,
    /// and says so in `recovery`. It throws only for I/O errors (and when another process
    /// has the journal open, after waiting `lockWait` for it to let go).
    public static func open(directory path: SystemPath, lockWait: Duration = Journal.lockWait,
                            expecting: (Int) -> Void = { _ in },
                            replay: (JournalRecord) -> Void) throws -> Journal {
        let journal = Journal(directory: try JournalDirectory.open(path, lockWait: lockWait))
        do {
            try journal.directory.removeTemporaryFiles()
            try journal.recover(expecting: expecting, replay: replay)
            return journal
        } catch {
            try? journal.close()
            throw error
        }
    }

    /// The snapshot then the log, each replayed up to its first damaged record; then the
    /// files are brought to a state whose replay gives exactly what was replayed now.
    private func recover(expecting: (Int) -> Void, replay: (JournalRecord) -> Void) throws {
        var report = RecoveryReport()
        defer { recovery = report }
        let snapshotFile = try readSnapshotIfPresent()
        let logFile = try directory.openIfPresent(JournalDirectory.logName)
        // Closed on every path except the one that keeps appending to it.
        var keepsLogFile = false
        defer { if !keepsLogFile { try? logFile?.close() } }
        let logBytes = try logFile.map { try directory.readAll($0, JournalDirectory.logName) }

        // Nothing, or what a crash while creating may leave (see `create`): no snapshot, and a
        // log no longer than a header that cannot be read. Nothing was ever committed.
        guard snapshotFile != nil || logBytes.map(Self.isLeftByCreating) == false else {
            report.createdNew = true
            try create(report: &report)
            return
        }
        // A journal that never compacted is its first log alone: generation 1's snapshot is
        // always empty (see `create`), so it is not missing but implied. Its log's name may not
        // be durable yet (`create` flushes nothing): the next commit flushes the directory.
        let isFirstLogAlone = snapshotFile == nil && logBytes.map(Self.isFirstLog) == true
        if isFirstLogAlone { logNameIsDurable = false }
        let snapshot = isFirstLogAlone ? FileHeader.encode(.snapshot, generation: 1) : snapshotFile

        expecting((snapshot.map { RecordFormat.frameCount($0, from: FileHeader.size) } ?? 0)
                  + (logBytes.map { RecordFormat.frameCount($0, from: FileHeader.size) } ?? 0))
        let snapshotPart = replaySnapshot(snapshot, replay: replay, report: &report)
        let logPart = logBytes.map {
            replayLog($0, extending: snapshotPart.generation, replay: replay, report: &report)
        }

        guard !report.snapshotDamaged, let snapshot, let snapshotGeneration = snapshotPart.generation else {
            // Rewrite a sound snapshot from exactly the records replayed, under a generation
            // no file here has, so a leftover log can never be taken for its extension.
            let newGeneration = max(snapshotPart.generation ?? 0, logPart?.generation ?? 0) + 1
            try installSnapshot(generation: newGeneration, report: &report) { writer in
                if let snapshot { try writer.write(snapshot[snapshotPart.records]) }
                if let logBytes, let logPart { try writer.write(logBytes[logPart.records]) }
            }
            return
        }

        generation = snapshotGeneration
        snapshotSize = Int64(snapshot.count)
        report.generation = snapshotGeneration
        if let logFile, let logBytes, let logPart, logPart.isReplayed {
            let validEnd = logPart.records.upperBound
            if validEnd < logBytes.count {
                try directory.io("truncate", JournalDirectory.logName) {
                    try logFile.resize(to: Int64(validEnd))
                    try logFile.sync()
                }
            }
            log = logFile
            keepsLogFile = true
            logSize = Int64(validEnd)
        } else {
            // No log extends the snapshot. Only right after the journal was created (a crash
            // before its first log existed) is a missing log expected; otherwise it was lost.
            if logFile == nil && snapshotGeneration > 1 {
                report.logUnreadable = true
                report.problems.append("log: missing; any records committed since the last compaction are lost")
            }
            try startLog()
        }
    }

    /// What was usable in one file: its generation when its header was sound, and the
    /// byte range of the records that were replayed.
    private struct ReplayedPart {
        var generation: UInt64?
        var records: Range<Int> = 0..<0
        var isReplayed = false
    }

    private func readSnapshotIfPresent() throws -> [UInt8]? {
        guard let file = try directory.openIfPresent(JournalDirectory.snapshotName) else { return nil }
        return try file.closeAfter { try directory.readAll(file, JournalDirectory.snapshotName) }
    }

    private func replaySnapshot(_ bytes: [UInt8]?, replay: (JournalRecord) -> Void,
                                report: inout RecoveryReport) -> ReplayedPart {
        guard let bytes else {
            report.snapshotDamaged = true
            report.problems.append("snapshot: missing although a log exists")
            return ReplayedPart()
        }
        let generation: UInt64
        do {
            generation = try FileHeader.generation(of: .snapshot, in: bytes)
        } catch {
            report.snapshotDamaged = true
            report.bytesTruncated += Int64(bytes.count)
            report.problems.append("snapshot: \(error); its \(bytes.count) bytes were dropped")
            return ReplayedPart()
        }
        let scan = RecordFormat.scan(bytes, from: FileHeader.size, replay)
        report.snapshotRecords = scan.recordCount
        if let damage = scan.damage {
            let dropped = bytes.count - scan.validEnd
            report.snapshotDamaged = true
            report.bytesTruncated += Int64(dropped)
            report.problems.append("snapshot: \(damage) at offset \(scan.validEnd); the \(dropped) bytes from there were dropped")
        }
        return ReplayedPart(generation: generation, records: FileHeader.size..<scan.validEnd, isReplayed: true)
    }

    private func replayLog(_ bytes: [UInt8], extending snapshotGeneration: UInt64?,
                           replay: (JournalRecord) -> Void, report: inout RecoveryReport) -> ReplayedPart {
        let generation: UInt64
        do {
            generation = try FileHeader.generation(of: .log, in: bytes)
        } catch {
            report.logUnreadable = true
            report.bytesTruncated += Int64(bytes.count)
            report.problems.append("log: \(error); its \(bytes.count) bytes were dropped")
            return ReplayedPart()
        }
        guard generation == snapshotGeneration else {
            if let snapshotGeneration, generation < snapshotGeneration {
                report.staleLogDiscarded = true
            } else {
                let dropped = bytes.count - FileHeader.size
                let expected = snapshotGeneration.map { String($0) } ?? "unknown"
                report.logUnreadable = true
                report.bytesTruncated += Int64(dropped)
                report.problems.append(
                    "log: generation \(generation) does not extend the snapshot (generation \(expected)); its \(dropped) record bytes were dropped")
            }
            return ReplayedPart(generation: generation)
        }
        let scan = RecordFormat.scan(bytes, from: FileHeader.size, replay)
        report.logRecords = scan.recordCount
        if let damage = scan.damage {
            let dropped = bytes.count - scan.validEnd
            report.logDamage = damage
            report.bytesTruncated += Int64(dropped)
            report.problems.append("log: \(damage) at offset \(scan.validEnd); the \(dropped) bytes from there were dropped")
        }
        return ReplayedPart(generation: generation, records: FileHeader.size..<scan.validEnd, isReplayed: true)
    }

    /// Creates a new journal: its first log, holding only its header, and nothing else, with
    /// no flush at all (issue 15: a first sync paid three flushes here before its first copy).
    ///
    /// Generation 1 needs no snapshot file: its snapshot would be empty, since compaction and
    /// recovery always write a newer generation, so recovery takes a first-generation log
    /// found alone as that snapshot's log (`isFirstLog`). Nothing is flushed because nothing
    /// needs to be until something is committed: a crash before the first commit leaves no
    /// log, an empty one, a header cut short or a whole header, and each opens as a new
    /// journal with nothing lost (`isLeftByCreating`; a whole header is a first log). The first commit then makes everything durable at once: its fdatasync the
    /// header with the records, and one flush of the directory the log's name
    /// (`logNameIsDurable`), before the commit returns.
    private func create(report: inout RecoveryReport) throws {
        generation = 1
        snapshotSize = Int64(FileHeader.size)
        let file = try directory.io("create", JournalDirectory.logName) {
            try directory.createEmptyFile(JournalDirectory.logName)
        }
        do {
            try directory.io("write", JournalDirectory.logName) {
                try file.writeAll(FileHeader.encode(.log, generation: generation))
            }
        } catch {
            try? file.close()
            throw error
        }
        logNameIsDurable = false
        report.generation = generation
        log = file
        logSize = Int64(FileHeader.size)
    }

    /// A log of the first generation: its header is sound and says generation 1.
    private static func isFirstLog(_ bytes: [UInt8]) -> Bool {
        (try? FileHeader.generation(of: .log, in: bytes)) == 1
    }

    /// A log found without a snapshot that a crash while creating left: no longer than a
    /// header, and that header unreadable. A commit writes at least one record after the
    /// header and fdatasyncs them together, so such a log never held a committed record.
    private static func isLeftByCreating(_ bytes: [UInt8]) -> Bool {
        bytes.count <= FileHeader.size && (try? FileHeader.generation(of: .log, in: bytes)) == nil
    }

    private func installSnapshot(generation: UInt64, report: inout RecoveryReport,
                                 _ writeRecords: (inout ChunkedFileWriter) throws -> Void) throws {
        snapshotSize = try writeTemporarySnapshot(generation: generation, writeRecords)
        try directory.installTemporary(for: JournalDirectory.snapshotName)
        self.generation = generation
        report.generation = generation
        try startLog()
    }
}
