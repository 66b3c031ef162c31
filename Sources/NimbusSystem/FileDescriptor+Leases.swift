import Glibc
import NimbusVocabulary

extension FileDescriptor {
    /// True when some process has this file open for writing. A read lease cannot be taken
    /// on such a file, so the probe takes one and gives it back at once; when leases are not
    /// possible here (not the owner, a network filesystem), it answers false.
    /// The corresponding C function is `fcntl(F_SETLEASE)`.
    func isOpenForWritingElsewhere() -> Bool { Sys.probeReadLease(rawValue) == 0 }

    /// True when some process has this file open for writing, asked as surely as this system
    /// allows: the lease probe, and where leases are refused, the descriptors listed in
    /// `/proc/*/fd` with their access mode. Only the processes this user may inspect are
    /// seen, which for a user's daemon are the user's own programs.
    func isOpenForWriting() -> Bool {
        switch Sys.probeReadLease(rawValue) {
        case 0: return true
        case 1: return false
        default:
            guard let status = try? Sys.fstat(rawValue) else { return false }
            return ProcessSupport.isOpenForWriting(FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino)))
        }
    }

    /// Whether the regular file `name` of this directory is open for writing in some program
    /// (see `isOpenForWriting()`); false when it is not there or not a regular file.
    func isOpenForWriting(_ name: SystemPath) -> Bool {
        // O_NONBLOCK: a FIFO swapped in must not hang the open; O_NOFOLLOW: a symlink is no file.
        guard let file = try? FileDescriptor.open(name, [.noFollow, .nonBlocking], relativeTo: self) else { return false }
        return file.closeAfter {
            guard let status = try? Sys.fstat(file.rawValue), status.st_mode & S_IFMT == S_IFREG else { return false }
            return file.isOpenForWriting()
        }
    }

    /// Whether the regular file `name` of this directory is open in some other program at all,
    /// asked of the kernel with a write lease (granted only when no one else has the file
    /// open): nil when leases are not possible here (not the file's owner, a network
    /// filesystem) or nothing is there. Unlike `/proc/*/fd`, this sees processes this user may
    /// not inspect, such as a privileged program's, once the daemon has dropped its capabilities.
    func isOpenElsewhere(_ name: SystemPath) -> Bool? {
        guard let file = try? FileDescriptor.open(name, [.noFollow, .nonBlocking], relativeTo: self) else { return nil }
        return file.closeAfter {
            guard let status = try? Sys.fstat(file.rawValue), status.st_mode & S_IFMT == S_IFREG else { return nil }
            switch Sys.probeWriteLease(file.rawValue) {
            case 0: return true
            case 1: return false
            default: return nil
            }
        }
    }

    /// The file's content changed less than `window` ago (by the wall clock).
    func isRecentlyWritten(_ metadata: FileMetadata, within window: Duration) -> Bool {
        ProcessSupport.wallClock - WallInstant(mtime: metadata.mtime) < window
    }
}
