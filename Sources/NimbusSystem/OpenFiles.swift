import Glibc

/// A file's identity: what two open descriptors or paths share when they name one file.
public struct FileIdentity: Hashable, Sendable {
    public var device: UInt64
    public var inode: UInt64
    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

extension ProcessSupport {
    /// Every file some process has open, from `/proc/*/fd` (DESIGN §5: a file in use is
    /// never evicted). Only the processes this user may inspect are seen, which for a user's
    /// daemon are the user's own; processes that exit meanwhile are skipped.
    public static func openFiles() -> Set<FileIdentity> {
        var found = Set<FileIdentity>()
        for pid in entries(of: "/proc") where pid.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            let folder = "/proc/" + String(decoding: pid, as: UTF8.self) + "/fd"
            for fd in entries(of: folder) {
                // stat follows the magic link to the open file itself.
                guard let status = try? Sys.fstatat(AT_FDCWD, SystemPath(bytes: Array(folder.utf8) + [UInt8(ascii: "/")] + fd), 0),
                      status.st_mode & S_IFMT == S_IFREG else { continue }
                found.insert(FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino)))
            }
        }
        return found
    }

    /// Whether some process has `file` open for writing (`O_WRONLY` or `O_RDWR`), from
    /// `/proc/*/fd` and the flags in `/proc/*/fdinfo`: the fallback where a lease cannot be
    /// taken to ask the kernel directly.
    public static func isOpenForWriting(_ file: FileIdentity) -> Bool {
        for pid in entries(of: "/proc") where pid.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            let process = "/proc/" + String(decoding: pid, as: UTF8.self)
            for fd in entries(of: process + "/fd") {
                let number = String(decoding: fd, as: UTF8.self)
                guard let status = try? Sys.fstatat(AT_FDCWD, SystemPath(process + "/fd/" + number), 0),
                      UInt64(status.st_dev) == file.device,
                      UInt64(status.st_ino) == file.inode else { continue }
                if let flags = openFlags(process + "/fdinfo/" + number), flags & O_ACCMODE != O_RDONLY { return true }
            }
        }
        return false
    }

    /// The `flags:` line of an fdinfo file (octal); nil when the descriptor is gone.
    private static func openFlags(_ fdinfo: String) -> Int32? {
        guard let file = try? FileDescriptor.open(SystemPath(fdinfo)),
              let bytes = try? file.closeAfter({ try file.readAll() }) else { return nil }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("flags:") {
            return Int32(line.dropFirst("flags:".count).firstField, radix: 8)
        }
        return nil
    }

    /// The names in a directory, without `.` and `..`; none when it cannot be read.
    private static func entries(of directory: String) -> [[UInt8]] {
        guard let fd = try? FileDescriptor.open(SystemPath(directory), .directory) else { return [] }
        guard let stream = try? Sys.openDirectoryStream(fd.rawValue) else {
            try? fd.close()
            return []
        }
        defer { try? Sys.closeDirectoryStream(stream) }
        var names: [[UInt8]] = []
        // A read error ends the list: what was read so far is all that can be said.
        while let entry = try? Sys.readDirectoryEntry(stream) {
            if entry.name != [UInt8(ascii: ".")] && entry.name != [UInt8(ascii: "."), UInt8(ascii: ".")] { names.append(entry.name) }
        }
        return names
    }
}

private extension Substring {
    var firstField: Substring {
        drop { $0 == " " || $0 == "\t" }.prefix { $0 != " " && $0 != "\t" && $0 != "\n" }
    }
}
