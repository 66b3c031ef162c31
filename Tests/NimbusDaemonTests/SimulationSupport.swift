import NimbusCore
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon
import NimbusVocabulary

/// The journal as the engine sees it, in memory: what is not committed is lost in a crash.
/// Who owns what: the engine's thread, as for the journal (the engine writes its store from
/// there only, `checkOwner`); the test reads `committed` between the engine's calls.
final class MemoryRecordStore: RecordStore, @unchecked Sendable {
    private(set) var committed: [RelativePath: PathRecord] = [:]
    private var pending: [(RelativePath, PathRecord?)] = []
    private(set) var writes = 0
    /// Set: every commit fails with it, and keeps its records for the next (as the journal does).
    var failure: Errno?
    /// The note that state marks may be missing, as committed and as changed since.
    private(set) var committedMarksNote = false
    private var pendingMarksNote: Bool?

    func put(_ path: RelativePath, _ record: PathRecord) { pending.append((path, record)); writes += 1 }
    func remove(_ path: RelativePath) { pending.append((path, nil)); writes += 1 }
    func commit() throws {
        if let failure { throw failure.at("append to", "journal.log") }
        for (path, record) in pending { committed[path] = record }
        pending = []
        if let note = pendingMarksNote { committedMarksNote = note }
        pendingMarksNote = nil
    }
    func compactIfNeeded(_ all: @autoclosure () -> [(key: RelativePath, value: PathRecord)]) throws {}
    var marksMayBeMissing: Bool {
        get { pendingMarksNote ?? committedMarksNote }
        set { pendingMarksNote = newValue }
    }
    /// The note of lent modes: durable at once, kept through a crash.
    private(set) var lentNote: [LentMode] = []
    func lentModes() throws -> [LentMode] { lentNote }
    func noteLentModes(_ entries: [LentMode]) throws { lentNote = entries }
    /// A crash: uncommitted changes vanish.
    func dropPending() {
        pending = []
        pendingMarksNote = nil
    }
}

func rp(_ s: String) -> RelativePath { try! RelativePath(validating: s) }

extension MemoryFileSystem {
    /// Every file's content and every link target, with where it is, skipping temporary files.
    func contents() -> [String: [RelativePath]] {
        var result: [String: [RelativePath]] = [:]
        for (path, node) in snapshot() {
            if path.components.contains(where: TemporaryName.isTemporary) || rp(".nimbus/tmp").contains(path) { continue }
            // A placeholder holds no content of the user's; it is rewritten as the cloud changes.
            if case .file(let bytes) = node.content, Placeholder.parse(bytes) != nil { continue }
            // Nor a real-name one: its holes read as zeros (no content of the simulation's is).
            if case .file(let bytes) = node.content, bytes.allSatisfy({ $0 == 0 }) { continue }
            switch node.content {
            case .file(let bytes): result["f:" + String(decoding: bytes, as: UTF8.self), default: []].append(path)
            case .symlink(let target): result["l:" + String(decoding: target, as: UTF8.self), default: []].append(path)
            default: break
            }
        }
        return result
    }

    /// What must match on both sides once synced: kind, content, mode — without Nimbus's own files.
    func syncedView() -> [RelativePath: String] {
        var result: [RelativePath: String] = [:]
        for (path, node) in snapshot() where !path.isRoot {
            if path == rp(".nimbus-root") || rp(".nimbus").contains(path) { continue }
            result[path] = "\(node.metadata.kind) \(node.metadata.kind == .directory ? 0 : node.metadata.mode) \(node.content)"
        }
        return result
    }
}
