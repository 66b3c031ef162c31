import NimbusCore
import NimbusJournal
import NimbusSystem
import NimbusVocabulary

/// Where the engine persists its per-path records. Changes become durable only at `commit`;
/// a crash before it loses them, which is safe: the next start rescans and finds the work
/// either done (both sides equal → recorded) or not (done again).
public protocol RecordStore: AnyObject {
    func put(_ path: RelativePath, _ record: PathRecord)
    func remove(_ path: RelativePath)
    func commit() throws
    /// Rewrites the store compactly when its log has grown; `all` is the live content.
    func compactIfNeeded(_ all: @autoclosure () -> [(key: RelativePath, value: PathRecord)]) throws
    /// Closes the store at a clean stop.
    func close() throws
    /// Whether the state marks (`user.nimbus.state`) of committed records may be missing from
    /// the local files: set before a commit whose uploads are marked after it, cleared once
    /// they are (durable with the next commit). A start that finds it set marks every synced
    /// file again (`SyncEngine.writePendingMarks`).
    var marksMayBeMissing: Bool { get set }
    /// The entries noted as lent their owner's bits (`LentMode`), as the last run left the
    /// note: a start sets their modes back. Empty after a clean stop.
    func lentModes() throws -> [LentMode]
    /// Replaces the note of lent entries by `entries` (none removes it); durable when it
    /// returns. It neither writes nor waits for the records buffered for the next `commit`.
    func noteLentModes(_ entries: [LentMode]) throws
}

extension RecordStore {
    public func close() throws {}
    public var marksMayBeMissing: Bool {
        get { false }
        set {}
    }
}

/// The real store: a `Journal` (DESIGN §6) in the pair's state directory.
public final class JournalRecordStore: RecordStore {
    let journal: Journal
    public let recoveryDescription: String

    /// Opens (or creates) the journal and returns the records it holds. Records that fail to
    /// decode are dropped (their paths are rescanned and re-recorded), never fatal.
    public static func open(directory: SystemPath) throws -> (JournalRecordStore, [RelativePath: PathRecord]) {
        var records: [RelativePath: PathRecord] = [:]
        var marksNoted = false
        let journal = try Journal.open(directory: directory, expecting: { records.reserveCapacity($0) }) { record in
            switch record {
            case .put(let key, let value):
                if key == marksNoteKey { return marksNoted = true }
                guard let path = try? RelativePath(validating: key) else { return }
                records[path] = try? PathRecordCodec.decode(value)
            case .remove(let key):
                if key == marksNoteKey { return marksNoted = false }
                guard let path = try? RelativePath(validating: key) else { return }
                records[path] = nil
            }
        }
        let store = JournalRecordStore(journal: journal, recovery: "\(journal.recovery)")
        store.marksNoted = marksNoted
        return (store, records)
    }

    /// The key of the note behind `marksMayBeMissing`. Not a path (a NUL byte), so a Nimbus that
    /// does not know the note skips it as it skips any key it cannot read.
    static let marksNoteKey = Array("\0marks-may-be-missing".utf8)
    private var marksNoted = false

    public var marksMayBeMissing: Bool {
        get { marksNoted }
        set {
            guard newValue != marksNoted else { return }
            marksNoted = newValue
            journal.append(newValue ? .put(key: Self.marksNoteKey, value: []) : .remove(key: Self.marksNoteKey))
        }
    }

    init(journal: Journal, recovery: String) {
        self.journal = journal
        self.recoveryDescription = recovery
    }

    public func put(_ path: RelativePath, _ record: PathRecord) {
        journal.append(.put(key: path.bytes, value: PathRecordCodec.encode(record)))
    }

    public func remove(_ path: RelativePath) { journal.append(.remove(key: path.bytes)) }
    public func commit() throws { try journal.commit() }

    public func compactIfNeeded(_ all: @autoclosure () -> [(key: RelativePath, value: PathRecord)]) throws {
        guard journal.needsCompaction else { return }
        let note = marksNoted ? [(key: Self.marksNoteKey, value: [UInt8]())] : []
        try journal.compact(liveEntries: all().lazy.map { (key: $0.key.bytes, value: PathRecordCodec.encode($0.value)) } + note)
    }

    public func close() throws { try journal.close() }

    /// Beside the journal, under its lock.
    static let lentModesNote: SystemPath = "lent-modes"

    public func lentModes() throws -> [LentMode] {
        guard let bytes = try journal.readNote(Self.lentModesNote) else { return [] }
        do {
            return try LentModeCodec.decode(bytes)
        } catch {
            throw UnreadableNote(path: journal.notePath(Self.lentModesNote), problem: "\(error)")
        }
    }

    public func noteLentModes(_ entries: [LentMode]) throws {
        try journal.writeNote(Self.lentModesNote, entries.isEmpty ? nil : LentModeCodec.encode(entries))
    }

    struct UnreadableNote: Error, CustomStringConvertible {
        var path: SystemPath
        var problem: String
        var description: String { "\(path) cannot be read: \(problem)" }
    }
}
