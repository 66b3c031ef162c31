import NimbusVocabulary

/// One inode of the in-memory filesystem. Directories map names to inode numbers, as on disk,
/// so a rename moves a name and never the inode behind it.
struct Inode {
    enum Content {
        case directory([[UInt8]: UInt64])
        case file([UInt8])
        case symlink([UInt8])
    }

    var content: Content
    /// Permission bits only (`0o7777`).
    var mode: UInt32
    var mtime: Int64
    var extendedAttributes: [String: [UInt8]] = [:]
    /// Plays ctime and the inode generation at once: a tree-wide sequence number taken at
    /// every change, so a copy can tell "untouched" from "rewritten with the old size and
    /// mtime", and a reused inode number from the inode it once named.
    var changeStamp: UInt64 = 0

    var kind: FileKind {
        switch content {
        case .directory: .directory
        case .file: .file
        case .symlink: .symlink
        }
    }

    var children: [[UInt8]: UInt64]? {
        if case .directory(let children) = content { children } else { nil }
    }

    /// What counts against the filesystem's capacity: file bytes and link targets. Directories
    /// are free, so that "capacity: 100" in a test means 100 bytes of content.
    var storedBytes: Int64 {
        switch content {
        case .directory: 0
        case .file(let bytes): Int64(bytes.count)
        case .symlink(let target): Int64(target.count)
        }
    }
}
