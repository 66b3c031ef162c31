import Glibc
import CNimbus

/// An open file descriptor. Always opened with `O_CLOEXEC`; the owner closes it
/// (`closeAfter` makes that impossible to forget).
public struct FileDescriptor: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public struct Options: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let readOnly = Options([])
        public static let writeOnly = Options(rawValue: O_WRONLY)
        public static let readWrite = Options(rawValue: O_RDWR)
        public static let create = Options(rawValue: O_CREAT)
        public static let exclusive = Options(rawValue: O_EXCL)
        public static let truncate = Options(rawValue: O_TRUNC)
        public static let append = Options(rawValue: O_APPEND)
        public static let directory = Options(rawValue: O_DIRECTORY)
        public static let noFollow = Options(rawValue: O_NOFOLLOW)
        public static let pathOnly = Options(rawValue: CNIMBUS_O_PATH)
        public static let nonBlocking = Options(rawValue: O_NONBLOCK)
        public static let noAccessTime = Options(rawValue: CNIMBUS_O_NOATIME)
    }

    /// open(2) / openat(2). The corresponding C function is `openat`.
    public static func open(_ path: SystemPath, _ options: Options = .readOnly, permissions: UInt32 = 0o644,
                            relativeTo directory: FileDescriptor? = nil) throws -> FileDescriptor {
        FileDescriptor(rawValue: try Sys.openat(directory?.rawValue ?? AT_FDCWD, path, options.rawValue,
                                                mode_t(permissions)))
    }

    /// Opens `path` below `directory` refusing any symlink on the way and any escape from
    /// `directory`, so a hostile tree cannot redirect a sync root. The C function is `openat2`.
    public static func open(beneath directory: FileDescriptor, _ path: RelativePath, _ options: Options = .readOnly,
                            permissions: UInt32 = 0o644) throws -> FileDescriptor {
        let name = path.isRoot ? SystemPath(".") : SystemPath(bytes: path.bytes)
        return FileDescriptor(rawValue: try Sys.openBeneath(directory.rawValue, name, options.rawValue,
                                                            mode_t(permissions)))
    }

    /// Stands for the working directory in the *at calls (`AT_FDCWD`): paths relative to it
    /// are looked up as `open(2)` would. Not a descriptor to close.
    public static let currentDirectory = FileDescriptor(rawValue: AT_FDCWD)

    public func close() throws { try Sys.close(rawValue) }

    /// Runs `body`, then closes the descriptor whatever happened.
    public func closeAfter<R>(_ body: () throws -> R) rethrows -> R {
        defer { try? close() }
        return try body()
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try Sys.read(rawValue, buffer)
    }

    public func read(fromAbsoluteOffset offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try Sys.pread(rawValue, buffer, offset)
    }

    /// Reads to end of file.
    public func readAll(sizeHint: Int = 4096) throws -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: max(4096, min(sizeHint + 1, 1 << 20)))
        while true {
            let count = try chunk.withUnsafeMutableBytes { b in try read(into: b) }
            if count == 0 { return result }
            result += chunk[..<count]
        }
    }

    public func write(_ buffer: UnsafeRawBufferPointer) throws -> Int { try Sys.write(rawValue, buffer) }

    /// Writes every byte, looping over short writes.
    public func writeAll(_ buffer: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < buffer.count {
            offset += try Sys.write(rawValue, UnsafeRawBufferPointer(rebasing: buffer[offset...]))
        }
    }

    public func writeAll(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { b in try writeAll(b) }
    }

    public func writeAll(toAbsoluteOffset offset: Int64, _ buffer: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < buffer.count {
            done += try Sys.pwrite(rawValue, UnsafeRawBufferPointer(rebasing: buffer[done...]), offset + Int64(done))
        }
    }

    public func seek(to offset: Int64) throws { _ = try Sys.lseek(rawValue, offset, SEEK_SET) }
    public func seekToEnd() throws -> Int64 { try Sys.lseek(rawValue, 0, SEEK_END) }

    /// fsync(2): data and metadata reach the disk.
    public func sync() throws { try Sys.fsync(rawValue) }
    /// fdatasync(2): data (and the size) reach the disk.
    public func dataSync() throws { try Sys.fdatasync(rawValue) }
    /// syncfs(2): everything dirty on this descriptor's filesystem reaches the disk.
    public func syncFileSystem() throws { try Sys.syncfs(rawValue) }

    public func resize(to size: Int64) throws { try Sys.ftruncate(rawValue, size) }

    /// fstat(2).
    public func metadata() throws -> FileMetadata { FileMetadata(try Sys.fstat(rawValue)) }

    public func setPermissions(_ mode: UInt32) throws { try Sys.fchmod(rawValue, mode_t(mode)) }

    /// Sets access and modification time (nanoseconds). The C function is `futimens`.
    public func setModificationTime(_ mtime: Int64) throws {
        let t = timespec(nanoseconds: mtime)
        try Sys.futimens(rawValue, (t, t))
    }

    /// Free and total bytes of the filesystem holding this descriptor. The C function is `fstatvfs`.
    public func spaceInfo() throws -> (available: Int64, total: Int64) {
        let st = try Sys.fstatvfs(rawValue)
        return (Int64(st.f_bavail) * Int64(st.f_frsize), Int64(st.f_blocks) * Int64(st.f_frsize))
    }
}

extension FileDescriptor {
    /// lstat of `path` relative to this directory (never follows a final symlink).
    public func metadata(of path: SystemPath) throws -> FileMetadata {
        FileMetadata(try Sys.fstatat(rawValue, path, AT_SYMLINK_NOFOLLOW))
    }

    public func makeDirectory(_ path: SystemPath, permissions: UInt32 = 0o755) throws {
        try Sys.mkdirat(rawValue, path, mode_t(permissions))
    }

    public func removeFile(_ path: SystemPath) throws { try Sys.unlinkat(rawValue, path, 0) }
    public func removeDirectory(_ path: SystemPath) throws { try Sys.unlinkat(rawValue, path, AT_REMOVEDIR) }

    public enum RenameMode: Sendable { case replace, noReplace, exchange }

    /// renameat2(2) from `from` (relative to self) to `to` (relative to `directory`).
    public func rename(_ from: SystemPath, to: SystemPath, in directory: FileDescriptor? = nil,
                       mode: RenameMode = .replace) throws {
        let flags: UInt32 = switch mode {
        case .replace: 0
        case .noReplace: CNimbusFlags.renameNoReplace
        case .exchange: CNimbusFlags.renameExchange
        }
        try Sys.renameat2(rawValue, from, (directory ?? self).rawValue, to, flags)
    }

    public func makeSymlink(_ path: SystemPath, target: [UInt8]) throws {
        try Sys.symlinkat(SystemPath(bytes: target), rawValue, path)
    }

    public func readSymlink(_ path: SystemPath) throws -> [UInt8] { try Sys.readlinkat(rawValue, path) }

    public func setPermissions(of path: SystemPath, _ mode: UInt32) throws {
        try Sys.fchmodat(rawValue, path, mode_t(mode))
    }

    /// Sets the modification time of `path` without following a final symlink.
    public func setModificationTime(of path: SystemPath, _ mtime: Int64) throws {
        let t = timespec(nanoseconds: mtime)
        try Sys.utimensat(rawValue, path, (t, t), AT_SYMLINK_NOFOLLOW)
    }
}

import CNimbus
import NimbusVocabulary
enum CNimbusFlags {
    static let renameNoReplace = CNIMBUS_RENAME_NOREPLACE
    static let renameExchange = CNIMBUS_RENAME_EXCHANGE
}
