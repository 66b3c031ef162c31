import CNimbus
import Glibc
import NimbusVocabulary

// The seam: every libc call Nimbus makes for I/O (files, directories, sockets, datagrams,
// poll, pipes, inotify, fanotify, xattrs, child processes) goes through one function in the
// Syscalls*.swift files, which turns -1/errno into a thrown `Errno`, retries EINTR in
// `retrying` (the one retry loop) and treats EBADF/EFAULT as bugs. The types above (
// `FileDescriptor`, `UnixStreamSocket`, ...) attach the operation and path (`SystemError`).
// In debug builds `SyscallFaults` can force EINTR and short transfers here, and act as another
// program right after a rename or before an unlink, for tests.

/// Runs one system call until it returns something other than -1 or fails with something
/// other than `EINTR` (a signal arrived before it could finish: run it again), and throws
/// that failure. The one place EINTR is retried; `close` (which must not be retried) and
/// `connect` (retried by its caller, within its deadline) do not come here.
@inline(__always)
func retrying<T: FixedWidthInteger>(_ body: () -> T) throws -> T {
    while true {
        #if DEBUG
        if SyscallFaults.interruptsThisAttempt() { continue }
        #endif
        let result = body()
        if result != -1 { return result }
        let error = Errno.current
        if error != .interrupted { throw bugChecked(error) }
    }
}

@inline(__always)
func check(_ result: Int32) throws {
    if result == -1 { throw bugChecked(Errno.current) }
}

/// EBADF (a descriptor that is not open, or not open for this) and EFAULT (a pointer outside
/// our memory) never come from the disk, the network or the user: only from a bug in Nimbus,
/// such as a descriptor used after `close` (which may by then be another file's number).
/// A debug build, and so every test run, stops right there (`assertionFailure`), where the
/// bug can be seen. A release daemon does not crash a user's sync for it: the errno is
/// thrown like any other failure and the caller logs it with the operation and path.
func bugChecked(_ error: Errno) -> Errno {
    if error == .badFileDescriptor || error == .badAddress {
        assertionFailure("\(error) from the kernel: Nimbus passed a closed descriptor or a bad pointer (a bug)")
    }
    return error
}

/// Calls that take a C string: the path is passed as its raw bytes, NUL-terminated, from a
/// temporary buffer (on the stack for usual lengths: no allocation per call).
@inline(__always)
func withCPath<R>(_ path: SystemPath, _ body: (UnsafePointer<CChar>) throws -> R) throws -> R {
    let count = path.bytes.count
    return try withUnsafeTemporaryAllocation(of: CChar.self, capacity: count + 1) { buffer in
        let base = buffer.baseAddress!
        path.bytes.withUnsafeBytes { bytes in
            if let source = bytes.baseAddress { UnsafeMutableRawPointer(base).copyMemory(from: source, byteCount: count) }
        }
        base[count] = 0
        return try body(base)
    }
}

enum Sys {
    /// How many of `wanted` bytes one read or write asks for: all of them, except under a
    /// test's forced short transfers.
    @inline(__always)
    static func transferCount(_ wanted: Int) -> Int {
        #if DEBUG
        return SyscallFaults.limitTransfer(wanted)
        #else
        return wanted
        #endif
    }

    static func openat(_ dir: Int32, _ path: SystemPath, _ flags: Int32, _ mode: mode_t) throws -> Int32 {
        try withCPath(path) { p in try retrying { Glibc.openat(dir, p, flags | O_CLOEXEC, mode) } }
    }

    /// openat2 confined beneath `dir` with no symlink anywhere in `path`.
    static func openBeneath(_ dir: Int32, _ path: SystemPath, _ flags: Int32, _ mode: mode_t) throws -> Int32 {
        try withCPath(path) { p in
            try retrying { cnimbus_openat_beneath(dir, p, flags | O_CLOEXEC, UInt32(mode)) }
        }
    }

    static func close(_ fd: Int32) throws {
        // close(2) must not be retried on EINTR: the descriptor is gone either way on Linux.
        try check(Glibc.close(fd))
    }

    // Reads and writes may move fewer bytes than asked (a short transfer): callers loop.
    // `transferCount` is the buffer's count, or less when a test forces short transfers.

    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = transferCount(buffer.count)
        return try retrying { Glibc.read(fd, buffer.baseAddress, count) }
    }

    static func pread(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, _ offset: Int64) throws -> Int {
        let count = transferCount(buffer.count)
        return try retrying { Glibc.pread(fd, buffer.baseAddress, count, off_t(offset)) }
    }

    static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws -> Int {
        let count = transferCount(buffer.count)
        return try retrying { Glibc.write(fd, buffer.baseAddress, count) }
    }

    static func pwrite(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, _ offset: Int64) throws -> Int {
        let count = transferCount(buffer.count)
        return try retrying { Glibc.pwrite(fd, buffer.baseAddress, count, off_t(offset)) }
    }

    static func fsync(_ fd: Int32) throws { try flushing(fd) { Glibc.fsync(fd) } }
    static func fdatasync(_ fd: Int32) throws { try flushing(fd) { Glibc.fdatasync(fd) } }
    static func syncfs(_ fd: Int32) throws { try flushing(fd) { cnimbus_syncfs(fd) } }

    /// One of the flushes above; tests see each (`SyscallFaults.afterSync`).
    @inline(__always)
    private static func flushing(_ fd: Int32, _ call: () -> Int32) throws {
        _ = try retrying(call)
        #if DEBUG
        SyscallFaults.synced(fd)
        #endif
    }
    /// An advisory lock on the whole open file (`LOCK_EX | LOCK_NB`...). The corresponding C
    /// function is `flock`.
    static func lockFile(_ fd: Int32, _ operation: Int32) throws {
        // Unqualified on purpose: `Glibc.flock` resolves to the `struct flock` of fcntl(2).
        _ = try retrying { flock(fd, operation) }
    }

    static func ftruncate(_ fd: Int32, _ size: Int64) throws { _ = try retrying { Glibc.ftruncate(fd, off_t(size)) } }

    static func lseek(_ fd: Int32, _ offset: Int64, _ whence: Int32) throws -> Int64 {
        Int64(try retrying { Glibc.lseek(fd, off_t(offset), whence) })
    }

    static func fstat(_ fd: Int32) throws -> stat {
        var st = stat()
        _ = try retrying { Glibc.fstat(fd, &st) }
        return st
    }

    static func fstatat(_ dir: Int32, _ path: SystemPath, _ flags: Int32) throws -> stat {
        var st = stat()
        _ = try withCPath(path) { p in try retrying { Glibc.fstatat(dir, p, &st, flags) } }
        return st
    }

    static func mkdirat(_ dir: Int32, _ path: SystemPath, _ mode: mode_t) throws {
        _ = try withCPath(path) { p in try retrying { Glibc.mkdirat(dir, p, mode) } }
    }

    static func unlinkat(_ dir: Int32, _ path: SystemPath, _ flags: Int32) throws {
        #if DEBUG
        SyscallFaults.unlinking(path)
        #endif
        _ = try withCPath(path) { p in try retrying { Glibc.unlinkat(dir, p, flags) } }
    }

    static func renameat2(_ fromDir: Int32, _ from: SystemPath, _ toDir: Int32, _ to: SystemPath,
                          _ flags: UInt32) throws {
        _ = try withCPath(from) { f in
            try withCPath(to) { t in try retrying { cnimbus_renameat2(fromDir, f, toDir, t, flags) } }
        }
        #if DEBUG
        SyscallFaults.renamed(to: to)
        #endif
    }

    static func symlinkat(_ target: SystemPath, _ dir: Int32, _ path: SystemPath) throws {
        _ = try withCPath(target) { t in
            try withCPath(path) { p in try retrying { Glibc.symlinkat(t, dir, p) } }
        }
    }

    static func readlinkat(_ dir: Int32, _ path: SystemPath) throws -> [UInt8] {
        var capacity = 256
        while true {
            var buffer = [UInt8](repeating: 0, count: capacity)
            let count = try withCPath(path) { p in
                try retrying {
                    buffer.withUnsafeMutableBufferPointer { b in
                        b.withMemoryRebound(to: CChar.self) { Glibc.readlinkat(dir, p, $0.baseAddress!, capacity) }
                    }
                }
            }
            if count < capacity { return Array(buffer[..<count]) }
            capacity *= 4
        }
    }

    static func fchmod(_ fd: Int32, _ mode: mode_t) throws { _ = try retrying { Glibc.fchmod(fd, mode) } }

    static func fchmodat(_ dir: Int32, _ path: SystemPath, _ mode: mode_t) throws {
        _ = try withCPath(path) { p in try retrying { Glibc.fchmodat(dir, p, mode, 0) } }
    }

    static func futimens(_ fd: Int32, _ times: (timespec, timespec)) throws {
        var t = [times.0, times.1]
        _ = try retrying { Glibc.futimens(fd, &t) }
    }

    static func utimensat(_ dir: Int32, _ path: SystemPath, _ times: (timespec, timespec), _ flags: Int32) throws {
        var t = [times.0, times.1]
        _ = try withCPath(path) { p in try retrying { Glibc.utimensat(dir, p, &t, flags) } }
    }

    static func copyFileRange(_ input: Int32, _ inOffset: inout Int64, _ output: Int32, _ outOffset: inout Int64,
                              _ count: Int) throws -> Int {
        let count = transferCount(count)
        return try retrying { cnimbus_copy_file_range(input, &inOffset, output, &outOffset, count) }
    }

    static func ficlone(_ dest: Int32, _ source: Int32) throws {
        _ = try retrying { cnimbus_ficlone(dest, source) }
    }

    static func fstatvfs(_ fd: Int32) throws -> statvfs {
        var st = statvfs()
        _ = try retrying { Glibc.fstatvfs(fd, &st) }
        return st
    }

    /// Drops this process's page-table entries for `length` bytes at `start`: a clean page of
    /// a file mapping is mapped again from the page cache at its next use (`ExecutablePages`).
    /// The corresponding C function is `madvise(MADV_DONTNEED)`.
    static func dropMappedPages(start: UInt, length: Int) throws {
        try check(Glibc.madvise(UnsafeMutableRawPointer(bitPattern: start), length, MADV_DONTNEED))
    }

    static func pipe() throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        _ = try retrying { cnimbus_pipe_cloexec(&fds) }
        return (fds[0], fds[1])
    }
}
