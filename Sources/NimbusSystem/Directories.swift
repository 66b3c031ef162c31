import Glibc
import NimbusVocabulary

/// `mkdir -p`: creates `path` and any missing parents with `permissions`.
/// Succeeds when the directory already exists. The corresponding C function is `mkdir`.
///
/// `durable`: the parent of each folder created is fsynced, so the new entries survive a crash
/// on filesystems that do not order directory creation (xfs, btrfs, some ext4 options); folders
/// that already existed cost nothing. The daemon's state folder needs it: losing it loses the
/// journal, and the next start rescans both sides as new.
public func makeDirectories(_ path: SystemPath, permissions: UInt32 = 0o755, durable: Bool = false) throws {
    var path = path
    while path.bytes.count > 1 && path.bytes.last == UInt8(ascii: "/") { path.bytes.removeLast() }
    if path.bytes.isEmpty || path.bytes == [UInt8(ascii: "/")] { return }
    do {
        try FileDescriptor(rawValue: AT_FDCWD).makeDirectory(path, permissions: permissions)
    } catch let error as Errno where error == .noSuchFile {
        try makeDirectories(path.parent, permissions: permissions, durable: durable)
        try makeDirectories(path, permissions: permissions, durable: durable)
        return
    } catch let error as Errno where error == .fileExists {
        guard try FileDescriptor(rawValue: AT_FDCWD).metadataFollowingLinks(of: path).kind == .directory else { throw error }
        return
    }
    if durable {
        let parent = try FileDescriptor.open(path.parent.bytes.isEmpty ? "." : path.parent, .directory)
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
