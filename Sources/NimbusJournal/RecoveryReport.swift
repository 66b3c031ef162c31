/// What `Journal.open` found and did. A torn log tail after a crash is expected and
/// harmless (those records were never committed); damage anywhere else means committed
/// records may be missing, and the owner should rescan both sides to rebuild its base.
public struct RecoveryReport: Sendable, Equatable, CustomStringConvertible {
    /// The directory held no journal; an empty one was created.
    public var createdNew = false
    /// The snapshot generation in force after recovery.
    public var generation: UInt64 = 0
    public var snapshotRecords = 0
    public var logRecords = 0
    /// The snapshot was missing, unreadable or held a damaged record: only the records
    /// before the damage were replayed, and the journal was rewritten from them.
    public var snapshotDamaged = false
    /// Bytes dropped: the torn or damaged tail of the log, plus any part of a damaged
    /// snapshot or log that could not be read.
    public var bytesTruncated: Int64 = 0
    /// Why the log's replay stopped early, when it did.
    public var logDamage: RecordDamage?
    /// None of the log's records could be replayed: its header was damaged, or it did not
    /// extend the snapshot that was read (a snapshot missing or with a damaged header).
    public var logUnreadable = false
    /// A log left behind by a compaction interrupted after its new snapshot was in place:
    /// its records were already in the snapshot. Expected after a crash, not damage.
    public var staleLogDiscarded = false
    /// One line per problem found, for the daemon's log.
    public var problems: [String] = []

    public var recordsReplayed: Int { snapshotRecords + logRecords }

    /// True when committed records may be missing, so the owner should rescan to rebuild its
    /// base: any damage except a torn log tail, which only ever holds a commit that never
    /// returned (a returned commit was fdatasynced whole). Conservative: a crash in the
    /// middle of a commit can also leave a checksum mismatch rather than a torn record.
    public var mayHaveLostCommittedRecords: Bool {
        snapshotDamaged || logUnreadable || (logDamage != nil && logDamage != .torn)
    }

    public var description: String {
        var text = createdNew
            ? "new journal created"
            : "replayed \(recordsReplayed) records (\(snapshotRecords) from the snapshot, \(logRecords) from the log), generation \(generation)"
        if bytesTruncated > 0 { text += "; dropped \(bytesTruncated) damaged or torn bytes" }
        if staleLogDiscarded { text += "; discarded a log already folded into the snapshot" }
        for problem in problems { text += "\n  " + problem }
        return text
    }
}
