import Glibc
import NimbusVocabulary

/// `mkdir -p`: creates `path` and any missing parents with `permissions`, and returns the
/// folders it created, outermost first (none when `path` was there). Succeeds when the
/// directory already exists. The corresponding C function is `mkdir`.
///
/// Nothing is flushed: `syncParents(of:)` makes the new entries survive a crash, when that
/// matters (the journal's folders, before the journal's first commit).
@discardableResult
public func makeDirectories(_ path: SystemPath, permissions: UInt32 = 0o755) throws -> [SystemPath] {
    var path = path
    while path.bytes.count > 1 && path.bytes.last == UInt8(ascii: "/") { path.bytes.removeLast() }
    if path.bytes.isEmpty || path.bytes == [UInt8(ascii: "/")] { return [] }
    do {
        try FileDescriptor(rawValue: AT_FDCWD).makeDirectory(path, permissions: permissions)
    } catch let error as Errno where error == .noSuchFile {
        return try makeDirectories(path.parent, permissions: permissions) + makeDirectories(path, permissions: permissions)
    } catch let error as Errno where error == .fileExists {
        guard try FileDescriptor(rawValue: AT_FDCWD).metadataFollowingLinks(of: path).kind == .directory else { throw error }
        return []
    }
    return [path]
}

/// fsyncs the parent of each folder of `created` (as `makeDirectories` returned them), so that
/// their entries survive a crash on filesystems that do not order directory creation (xfs,
/// btrfs, some ext4 options).
public func syncParents(of created: [SystemPath]) throws {
    for folder in created {
        let parent = try FileDescriptor.open(folder.parent.bytes.isEmpty ? "." : folder.parent, .directory)
        defer { try? parent.close() }
        try parent.sync()
    }
}

extension FileDescriptor {
    /// stat(2) of `path`, following symlinks (for roots a user may have symlinked).
    public func metadataFollowingLinks(of path: SystemPath) throws -> FileMetadata {
        FileMetadata(try Sys.fstatat(rawValue, path, 0))
    }
}

/// The kind of what `path` names, following symlinks; nil when nothing is there (ENOENT, or a
/// component on the way that is not a folder).
public func kindOfPath(_ path: SystemPath) throws -> FileKind? {
    do {
        return try FileDescriptor(rawValue: AT_FDCWD).metadataFollowingLinks(of: path).kind
    } catch let error as Errno where error == .noSuchFile || error == .notDirectory {
        return nil
    }
}
