import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// What the engine needs from the kernel's hooks to keep real-name placeholders (DESIGN §5):
/// the files themselves on the local side, marked, and known to the listener that fills them.
/// `FanotifyPlaceholderMarker` is the real one (a fanotify group and the hydration server);
/// the engine simulation uses a fake over an in-memory filesystem.
///
/// The listener knows placeholders by inode: a placeholder is known before it can be opened
/// under its real name, and forgotten once it is content again.
public protocol PlaceholderMarker: Sendable {
    /// A temporary not-downloaded file standing for the cloud file `cloud` of `path` (its
    /// size, mtime and mode, `user.nimbus.state=notDownloaded`), marked and known as `path`'s
    /// placeholder, ready to be installed at `path` by the local filesystem.
    func prepare(_ path: RelativePath, cloud: FileMetadata, durable: Bool) throws -> PreparedCopy

    /// Turns the downloaded `path`, still `expected`, into a not-downloaded file in place: known
    /// and marked first, refused (`DiskFileSystem.PunchRefusal`) when it changed or another
    /// process has it open, `beforePunching` (the journal) last, then the content freed.
    /// Returns the file's metadata afterwards (size, mtime, mode and inode as before).
    func punchOut(_ path: RelativePath, expected: FileMetadata, cloud: FileMetadata,
                  beforePunching: () throws -> Void) throws -> FileMetadata

    /// Knows the placeholder `local` as `path`'s (after a rename: the mark stays on the inode).
    func register(_ path: RelativePath, local: FileMetadata, cloud: FileMetadata)

    /// At start: marks the journal's placeholder `path` again (the marks died with the last
    /// group) and knows it; `current` is the file now, `recorded` the journal's. A guarded file
    /// (mode 0) gets `recorded.mode` back only once marked.
    func adopt(_ path: RelativePath, current: FileMetadata, recorded: FileMetadata, cloud: FileMetadata) throws

    /// At start, before `adopt`: when the journal's placeholder `path` (`current` now,
    /// `recorded` in the journal) holds part of the cloud file `cloud` because a fill was
    /// interrupted (kill -9), makes it whole not-downloaded again and returns its metadata;
    /// nil when it is anything else (an edit is content, not a placeholder).
    func undoInterruptedFill(_ path: RelativePath, current: FileMetadata, recorded: FileMetadata, cloud: FileMetadata) -> FileMetadata?

    /// At a clean stop: takes every permission away from the placeholder `path`, its mode kept
    /// in `user.nimbus.mode` (and in the journal, which still has it).
    func guardReading(_ path: RelativePath) throws

    /// At start, once every placeholder of the journal is marked and known (`adopt`): opens
    /// of other files need no longer wait for that.
    func placeholdersKnown()

    /// Forgets a file that is no longer a placeholder (downloaded, removed, replaced).
    func forget(_ local: FileMetadata)

    /// Whether the placeholder `local` (by inode) is being filled for a reader right now.
    func isBeingFilled(_ local: FileMetadata) -> Bool
}

extension PlaceholderMarker {
    public func placeholdersKnown() {}
    public func isBeingFilled(_ local: FileMetadata) -> Bool { false }
}

/// The real marker: the pair's fanotify group, and the hydration server that answers it.
public final class FanotifyPlaceholderMarker: PlaceholderMarker {
    let local: DiskFileSystem
    let group: FanotifyGroup
    let server: HydrationServer

    public init(local: DiskFileSystem, group: FanotifyGroup, server: HydrationServer) {
        self.local = local
        self.group = group
        self.server = server
    }

    public func placeholdersKnown() { server.placeholdersKnown() }

    public func isBeingFilled(_ local: FileMetadata) -> Bool { server.isFilling(device: local.device, inode: local.inode) }

    public func prepare(_ path: RelativePath, cloud: FileMetadata, durable: Bool) throws -> PreparedCopy {
        let shape = RealNamePlaceholderFile.Shape(size: cloud.size, mtime: cloud.mtime, mode: cloud.mode)
        return try local.prepareRealNamePlaceholder(near: path, shape: shape, attributes: Self.attributes, marking: group,
                                                    durable: durable) { marked in
            server.register(device: marked.device, inode: marked.inode, .init(path: path, cloud: cloud))
        }
    }

    public func punchOut(_ path: RelativePath, expected: FileMetadata, cloud: FileMetadata,
                         beforePunching: () throws -> Void) throws -> FileMetadata {
        var held: FileMetadata?
        do {
            let punched = try local.punchOut(path, expected: expected, group: group, state: Self.attributes[0], marking: { file in
                held = file
                server.beginEviction(device: file.device, inode: file.inode, .init(path: path, cloud: cloud))
            }, beforePunching: beforePunching)
            server.endEviction(device: punched.device, inode: punched.inode, punched: true)
            return punched
        } catch {
            if let held { server.endEviction(device: held.device, inode: held.inode, punched: false) }
            throw error
        }
    }

    public func register(_ path: RelativePath, local file: FileMetadata, cloud: FileMetadata) {
        server.register(device: file.device, inode: file.inode, .init(path: path, cloud: cloud))
    }

    public func adopt(_ path: RelativePath, current: FileMetadata, recorded: FileMetadata, cloud: FileMetadata) throws {
        server.register(device: current.device, inode: current.inode, .init(path: path, cloud: cloud))
        do {
            try local.withRootDescriptor { root in
                if current.mode == 0 && recorded.mode != 0 {
                    try RealNamePlaceholderFile.restoreReading(beneath: root, in: path.parent, [(path.name, recorded.mode)],
                                                               group: group)
                } else {
                    try group.mark(beneath: root, path)
                }
            }
        } catch {
            server.forget(device: current.device, inode: current.inode)
            throw error
        }
    }

    public func guardReading(_ path: RelativePath) throws {
        try local.withRootDescriptor { root in _ = try RealNamePlaceholderFile.guardReading(beneath: root, path) }
    }

    public func forget(_ file: FileMetadata) { server.forget(device: file.device, inode: file.inode) }

    static let attributes: [(name: String, value: [UInt8])] = [
        (Placeholder.stateAttribute, Array(FileState.notDownloaded.name.utf8)),
    ]
}
