import CNimbus
import Glibc
import NimbusVocabulary

// The seam for scanning, copying and extended attributes. Like Syscalls.swift, each function
// is one libc call that retries EINTR and throws `Errno`. The directory-stream calls
// (`openDirectoryStream`, `closeDirectoryStream`) live in Syscalls+Inotify.swift.

extension Sys {
    /// The name of the next entry of a directory stream ("." and ".." included), or nil at
    /// the end. The pointer is valid until the next call on the same stream: the scanner reads
    /// hundreds of thousands of names and copies each one once, into the path it builds.
    /// The corresponding C function is `readdir`.
    static func nextDirectoryEntryName(_ stream: OpaquePointer) throws -> UnsafePointer<CChar>? {
        try nextDirectoryEntry(stream)?.name
    }

    /// The next entry of a directory stream with its `d_type` (`DT_UNKNOWN` where the
    /// filesystem does not say); the name is valid until the next call on the stream.
    static func nextDirectoryEntry(_ stream: OpaquePointer) throws -> (name: UnsafePointer<CChar>, type: UInt8)? {
        errno = 0  // readdir returns NULL both at the end and on error; only errno tells them apart.
        guard let entry = readdir(stream) else {
            if errno != 0 { throw bugChecked(Errno.current) }
            return nil
        }
        return (UnsafeRawPointer(entry).advanced(by: direntNameOffset).assumingMemoryBound(to: CChar.self), entry.pointee.d_type)
    }

    private static let direntNameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!

    /// The descriptor underneath a directory stream, for the *at calls on its entries.
    /// The corresponding C function is `dirfd`.
    static func descriptor(of stream: OpaquePointer) -> Int32 { dirfd(stream) }

    /// lstat/stat of `name` relative to `dir` into a caller-owned buffer, with a C string the
    /// caller already has (a `readdir` name), so the scanner allocates nothing per entry.
    /// The corresponding C function is `fstatat`.
    static func fstatat(_ dir: Int32, _ name: UnsafePointer<CChar>, _ flags: Int32, into st: inout stat) throws {
        _ = try retrying { Glibc.fstatat(dir, name, &st, flags) }
    }

    /// Reads a symlink's target into `buffer`; returns the byte count, which equals
    /// `buffer.count` when the target may have been cut. The corresponding C function is `readlinkat`.
    static func readlinkat(_ dir: Int32, _ name: UnsafePointer<CChar>,
                           into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try retrying {
            Glibc.readlinkat(dir, name, buffer.baseAddress!.assumingMemoryBound(to: CChar.self), buffer.count)
        }
    }

    /// Makes a second name for a file; fails with `EEXIST` rather than replace anything.
    /// The corresponding C function is `linkat`.
    /// The filesystem's magic number (`statfs.f_type`).
    static func filesystemType(_ fd: Int32) throws -> Int64 {
        var type: Int64 = 0
        _ = try retrying { cnimbus_fstatfs_type(fd, &type) }
        return type
    }

    static func linkat(_ fromDir: Int32, _ from: SystemPath, _ toDir: Int32, _ to: SystemPath) throws {
        _ = try withCPath(from) { f in
            try withCPath(to) { t in try retrying { Glibc.linkat(fromDir, f, toDir, t, 0) } }
        }
    }

    /// chmod of `path` relative to `dir`; with `AT_SYMLINK_NOFOLLOW` a final symlink is never
    /// followed (`EOPNOTSUPP` instead). The corresponding C function is `fchmodat`.
    static func fchmodat(_ dir: Int32, _ path: SystemPath, _ mode: mode_t, flags: Int32) throws {
        _ = try withCPath(path) { p in try retrying { Glibc.fchmodat(dir, p, mode, flags) } }
    }

    /// Announces how a file will be read, so the kernel can read ahead further.
    /// The corresponding C function is `posix_fadvise`.
    static func fadvise(_ fd: Int32, _ advice: Int32) throws {
        // posix_fadvise returns the error number instead of setting errno.
        let result = posix_fadvise(fd, 0, 0, advice)
        if result != 0 { throw bugChecked(Errno(rawValue: result)) }
    }

    /// The descriptor flags (`FD_CLOEXEC`). The corresponding C function is `fcntl(F_GETFD)`.
    static func descriptorFlags(_ fd: Int32) throws -> Int32 {
        try retrying { fcntl(fd, F_GETFD) }
    }

    /// The value of attribute `name` of `path` into `buffer` (an empty buffer asks for the
    /// size); a final symlink is not followed. The corresponding C function is `lgetxattr`.
    static func lgetxattr(_ path: SystemPath, _ name: String,
                          into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try withCPath(path) { p in try retrying { CNimbus.lgetxattr(p, name, buffer.baseAddress, buffer.count) } }
    }

    /// Sets attribute `name` of `path`; a final symlink is not followed.
    /// The corresponding C function is `lsetxattr`.
    static func lsetxattr(_ path: SystemPath, _ name: String, _ value: UnsafeRawBufferPointer) throws {
        _ = try withCPath(path) { p in
            try retrying { CNimbus.lsetxattr(p, name, value.baseAddress, value.count, 0) }
        }
    }

    /// The value of attribute `name` of the entry `path` of directory `dir` into `buffer` (an
    /// empty buffer asks for the size); a final symlink is not followed. Linux 6.13 and later.
    /// The corresponding C function is `getxattrat`.
    static func getxattrat(_ dir: Int32, _ path: SystemPath, _ name: String,
                           into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try withCPath(path) { p in try retrying { cnimbus_getxattrat(dir, p, name, buffer.baseAddress, buffer.count) } }
    }

    /// Sets attribute `name` of the entry `path` of directory `dir`; a final symlink is not
    /// followed. Linux 6.13 and later. The corresponding C function is `setxattrat`.
    static func setxattrat(_ dir: Int32, _ path: SystemPath, _ name: String, _ value: UnsafeRawBufferPointer) throws {
        _ = try withCPath(path) { p in
            try retrying { cnimbus_setxattrat(dir, p, name, value.baseAddress, value.count) }
        }
    }

    /// Sets attribute `name` of an open file. The corresponding C function is `fsetxattr`.
    static func fsetxattr(_ fd: Int32, _ name: String, _ value: UnsafeRawBufferPointer) throws {
        _ = try retrying { CNimbus.fsetxattr(fd, name, value.baseAddress, value.count, 0) }
    }

    /// Removes attribute `name` of `path`; a final symlink is not followed.
    /// The corresponding C function is `lremovexattr`.
    static func lremovexattr(_ path: SystemPath, _ name: String) throws {
        _ = try withCPath(path) { p in try retrying { CNimbus.lremovexattr(p, name) } }
    }
}

/// Runs `body`, turning a thrown `Errno` into a `SystemError` that names `operation` and
/// `path`; other errors pass through unchanged.
@inline(__always)
func attributing<R>(_ operation: String, _ path: some CustomStringConvertible, _ body: () throws -> R) throws -> R {
    do {
        return try body()
    } catch let error as Errno {
        throw error.at(operation, path)
    }
}

extension RelativePath {
    /// The path as errors show it: "." for the root, whose description is empty.
    var shown: String { isRoot ? "." : description }
}
