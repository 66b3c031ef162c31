import Glibc
import NimbusVocabulary

/// What the control server checks about the directory of its socket and the socket file.
public struct OwnershipInfo: Sendable, Equatable {
    public var kind: FileKind
    public var isSocket: Bool
    public var uid: UInt32
    /// Permission bits, with the sticky bit (0o1000).
    public var mode: UInt32
    public var inode: UInt64
}

extension UnixStreamSocket {
    /// lstat(2) of `path`: kind, owner, mode, inode; nil when nothing is there.
    public static func ownership(of path: String) throws -> OwnershipInfo? {
        let st: stat
        do {
            st = try Sys.fstatat(AT_FDCWD, SystemPath(path), AT_SYMLINK_NOFOLLOW)
        } catch let error as Errno where error == .noSuchFile {
            return nil
        }
        let metadata = FileMetadata(st)
        return OwnershipInfo(kind: metadata.kind, isSocket: st.st_mode & S_IFMT == S_IFSOCK, uid: st.st_uid,
                             mode: UInt32(st.st_mode & 0o7777), inode: UInt64(st.st_ino))
    }

    /// mkdir(2) of one directory with exactly `permissions` (chmod after, as the umask may
    /// have taken bits away); false when something already exists there.
    public static func makeDirectory(_ path: String, permissions: UInt32) throws -> Bool {
        do {
            try FileDescriptor(rawValue: AT_FDCWD).makeDirectory(SystemPath(path), permissions: permissions)
        } catch let error as Errno where error == .fileExists {
            return false
        }
        try FileDescriptor(rawValue: AT_FDCWD).setPermissions(of: SystemPath(path), permissions)
        return true
    }

    /// Removes the socket file at `path` if it is still the one with `inode` (a newer daemon
    /// may have replaced it).
    public static func removeSocketFile(_ path: String, inode: UInt64) {
        guard let info = try? ownership(of: path), info.isSocket, info.inode == inode else { return }
        try? Sys.unlinkat(AT_FDCWD, SystemPath(path), 0)
    }
}
