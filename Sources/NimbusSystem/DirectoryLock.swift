import Glibc

/// An exclusive advisory lock (flock(2)) on a directory: one daemon per local folder
/// (issue #13). The kernel releases it however the process ends, kill -9 included, so a
/// crashed daemon never leaves a stale lock behind.
public struct DirectoryLock: Sendable {
    public let descriptor: FileDescriptor
    public let device: UInt64
    public let inode: UInt64

    /// Locks the directory at `path`; nil when another process holds the lock.
    public static func acquire(_ path: SystemPath) throws -> DirectoryLock? {
        let fd = try attributing("open", path) { try FileDescriptor.open(path, [.directory]) }
        do {
            let metadata = try fd.metadata()
            guard try attributing("flock", path, { try fd.tryLockExclusive() }) else {
                try? fd.close()
                return nil
            }
            return DirectoryLock(descriptor: fd, device: metadata.device, inode: metadata.inode)
        } catch {
            try? fd.close()
            throw error
        }
    }

    /// The device and inode of the directory at `path` (following symlinks).
    public static func identity(of path: SystemPath) throws -> (device: UInt64, inode: UInt64) {
        let metadata = try attributing("stat", path) { try FileDescriptor(rawValue: AT_FDCWD).metadataFollowingLinks(of: path) }
        return (metadata.device, metadata.inode)
    }

    /// Which process holds a flock on the inode `inode` of device `device`, from
    /// /proc/locks ("1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"); nil when unknown.
    public static func holder(device: UInt64, inode: UInt64) -> Int32? {
        guard let bytes = try? ProcessSupport.readFileIfExists("/proc/locks"), let text = String(validating: bytes, as: UTF8.self)
        else { return nil }
        return holder(in: text, device: device, inode: inode)
    }

    static func holder(in locks: String, device: UInt64, inode: UInt64) -> Int32? {
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff))
        let minor = (device & 0xff) | ((device >> 12) & ~UInt64(0xff))
        for line in locks.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK", let pid = Int32(fields[4]) else { continue }
            let id = fields[5].split(separator: ":")
            guard id.count == 3, UInt64(id[0], radix: 16) == major, UInt64(id[1], radix: 16) == minor,
                  UInt64(id[2]) == inode else { continue }
            return pid
        }
        return nil
    }
}
