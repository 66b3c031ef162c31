import CNimbus
import Glibc
import NimbusVocabulary

/// Real-name placeholders written by the engine's executor through the local `DiskFileSystem`
/// (DESIGN §5): a placeholder is prepared like a download (a temporary file, then `install`,
/// which replaces nothing but what the plan expected), and evicted in place.
extension DiskFileSystem {
    /// Writes a temporary not-downloaded file for `path`: `shape.size` of hole (no blocks),
    /// `attributes`, the mark in `group` placed through the descriptor while the file is
    /// still 0600 and nameless to anyone else, then the real mode and mtime. `registered` is
    /// called with the file's metadata once it is marked and before it can be installed, so
    /// that the listener knows the inode before any reader can open it under the real name.
    /// Install it with `install(_:at:replacing:…)`; `discard` it otherwise.
    public func prepareRealNamePlaceholder(near path: RelativePath, shape: RealNamePlaceholderFile.Shape,
                                           attributes: [(name: String, value: [UInt8])], marking group: FanotifyGroup?,
                                           durable: Bool, registered: (FileMetadata) -> Void) throws -> PreparedCopy {
        try withRoot { root in
            let temporary = try TemporaryFile.create(beneath: root, temporaryPlacement(near: path))
            let metadata = try withoutActuallyEscaping(registered) { registered in
                try RealNamePlaceholderFile.shapeNotDownloaded(temporary, beneath: root, shape: shape, attributes: attributes,
                                                               marking: group, durable: durable, marked: registered)
            }
            return PreparedCopy(temporary: temporary.path, source: metadata, bytesCopied: 0)
        }
    }

    /// Why an in-place eviction did not happen: decisions about the file, not syscall failures
    /// (those are `SystemError`s), so the caller can try again later instead of reporting.
    public enum PunchRefusal: Error, Hashable, Sendable {
        /// The file is not what the plan expected any more.
        case changed(RelativePath)
        /// Another process has it open (the kernel's lease answer): its descriptor, opened
        /// before the mark, would read the holes.
        case openElsewhere(RelativePath)
    }

    /// Evicts the downloaded file `path` in place (DESIGN §5): opens it (before its mark, so
    /// that this descriptor raises no events), checks it is still `expected`, calls `marking`
    /// (the listener learns the inode and holds back its readers), marks it in `group`, asks
    /// the kernel whether anyone else has it open (a write lease), calls `beforePunching`
    /// (the journal says placeholder first), and frees its content, keeping size, mtime and
    /// mode, with `state` set. When it throws before the punch, the mark is taken off again.
    public func punchOut(_ path: RelativePath, expected: FileMetadata, group: FanotifyGroup?,
                         state: (name: String, value: [UInt8]), marking: (FileMetadata) -> Void,
                         beforePunching: () throws -> Void) throws -> FileMetadata {
        try withRoot { root in
            let file = try attributing("open", path.shown) {
                try FileDescriptor.open(beneath: root, path, [.readWrite, .noFollow, .nonBlocking])
            }
            return try file.closeAfter {
                let current = try attributing("fstat", path.shown) { try file.metadata() }
                guard current.kind == .file, current.isUnchanged(from: expected) else { throw PunchRefusal.changed(path) }
                marking(current)
                try attributing("fanotify_mark", path.shown) { try group?.mark(file: file) }
                do {
                    if Sys.probeWriteLease(file.rawValue) == 0 { throw PunchRefusal.openElsewhere(path) }
                    let again = try attributing("fstat", path.shown) { try file.metadata() }
                    guard again.isUnchanged(from: expected) else { throw PunchRefusal.changed(path) }
                    try beforePunching()
                } catch {
                    try? group?.unmark(file: file)
                    throw error
                }
                try RealNamePlaceholderFile.punchOut(file, path: path, state: state)
                return try attributing("fstat", path.shown) { try file.metadata() }
            }
        }
    }
}
