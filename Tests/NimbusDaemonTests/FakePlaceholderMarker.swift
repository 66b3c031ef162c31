import NimbusCore
import NimbusSimulation
import NimbusSystem
import NimbusVocabulary
import Synchronization
@testable import NimbusDaemon

/// The kernel's hooks played in memory, for the engine with real-name placeholders: a
/// placeholder is a file of zeros of the cloud file's size (what its holes read as), known by
/// inode as the real marker's listener knows it; `open` plays a program opening one (the
/// listener fills it in place and tells the engine); `guarded` and `marked` play the guard
/// and the marks so tests can check their order.
final class FakePlaceholderMarker: PlaceholderMarker, Sendable {
    let disk: MemoryFileSystem
    let cloudDisk: MemoryFileSystem
    struct Known: Sendable, Hashable {
        var path: RelativePath
        var cloud: FileMetadata
    }
    let known = Mutex<[UInt64: Known]>([:])
    let marked = Mutex<Set<UInt64>>([])
    /// Every call, in order, for tests of what happens first.
    let calls = Mutex<[String]>([])

    init(local: MemoryFileSystem, cloud: MemoryFileSystem) {
        disk = local
        cloudDisk = cloud
    }

    static let notDownloaded = Array(FileState.notDownloaded.name.utf8)

    func prepare(_ path: RelativePath, cloud: FileMetadata, durable: Bool) throws -> PreparedCopy {
        let prepared = try disk.prepareFile(near: path, contents: [UInt8](repeating: 0, count: Int(cloud.size)), mode: cloud.mode,
                                            mtime: cloud.mtime, attributes: [(Placeholder.stateAttribute, Self.notDownloaded)],
                                            durable: durable)
        known.withLock { $0[prepared.source.inode] = Known(path: path, cloud: cloud) }
        marked.withLock { _ = $0.insert(prepared.source.inode) }
        calls.withLock { $0.append("prepare \(path)") }
        return prepared
    }

    func punchOut(_ path: RelativePath, expected: FileMetadata, cloud: FileMetadata,
                  beforePunching: () throws -> Void) throws -> FileMetadata {
        guard let current = try disk.metadata(of: path), current.isUnchanged(from: expected) else {
            throw DiskFileSystem.PunchRefusal.changed(path)
        }
        known.withLock { $0[current.inode] = Known(path: path, cloud: cloud) }
        marked.withLock { _ = $0.insert(current.inode) }
        calls.withLock { $0.append("mark \(path)") }
        do { try beforePunching() } catch {
            forget(current)
            throw error
        }
        try disk.write(path, [UInt8](repeating: 0, count: Int(current.size)))
        try disk.setAttributes(path, mode: nil, mtime: expected.mtime)
        try disk.setExtendedAttribute(Placeholder.stateAttribute, of: path, to: Self.notDownloaded)
        calls.withLock { $0.append("punch \(path)") }
        return try disk.metadata(of: path)!
    }

    func register(_ path: RelativePath, local: FileMetadata, cloud: FileMetadata) {
        known.withLock { $0[local.inode] = Known(path: path, cloud: cloud) }
    }

    func adopt(_ path: RelativePath, current: FileMetadata, recorded: FileMetadata, cloud: FileMetadata) throws {
        known.withLock { $0[current.inode] = Known(path: path, cloud: cloud) }
        marked.withLock { _ = $0.insert(current.inode) }
        calls.withLock { $0.append("mark \(path)") }
        if current.mode == 0 && recorded.mode != 0 {
            try disk.setAttributes(path, mode: recorded.mode, mtime: nil)
            calls.withLock { $0.append("unguard \(path)") }
        }
    }

    func guardReading(_ path: RelativePath) throws {
        try disk.setAttributes(path, mode: 0, mtime: nil)
        calls.withLock { $0.append("guard \(path)") }
    }

    func forget(_ local: FileMetadata) {
        _ = known.withLock { $0.removeValue(forKey: local.inode) }
        _ = marked.withLock { $0.remove(local.inode) }
    }

    /// The listener restarted (a new daemon): no mark survives.
    func restart() {
        known.withLock { $0 = [:] }
        marked.withLock { $0 = [] }
    }

    func isPlaceholder(_ path: RelativePath) -> Bool {
        guard let inode = try? disk.metadata(of: path)?.inode else { return false }
        return known.withLock { $0[inode]?.path == path } && marked.withLock { $0.contains(inode) }
    }

    /// A program opens `path`: a marked placeholder is filled in place from the cloud (the
    /// listener's fill) and the outcome returned for the engine; nil when nothing happens.
    func open(_ path: RelativePath) -> HydrationServer.Outcome? {
        guard let current = try? disk.metadata(of: path), let entry = known.withLock({ $0[current.inode] }),
              marked.withLock({ $0.contains(current.inode) }) else { return nil }
        let placeholder = HydrationServer.Placeholder(path: entry.path, cloud: entry.cloud)
        guard current.size == entry.cloud.size else {
            forget(current)
            return .changedLocally(placeholder)
        }
        guard case .file(let bytes)? = cloudDisk.snapshot()[entry.path]?.content,
              let there = try? cloudDisk.metadata(of: entry.path), there.isUnchanged(from: entry.cloud) else {
            return .failed(placeholder, .ioError, "cannot open the cloud's \(entry.path)")
        }
        do {
            try disk.write(path, bytes)
            try disk.setAttributes(path, mode: nil, mtime: entry.cloud.mtime)
            try disk.setExtendedAttribute(Placeholder.stateAttribute, of: path, to: Array(FileState.downloaded.name.utf8))
        } catch {
            return .failed(placeholder, .ioError, "\(error)")
        }
        forget(current)
        return .filled(placeholder, local: try! disk.metadata(of: path)!)
    }
}
