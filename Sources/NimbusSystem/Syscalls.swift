import CNimbus
import Glibc

// The seam: every libc call Nimbus makes goes through one function here, which retries EINTR
// and turns -1/errno into a thrown `Errno`. Nothing else in the project calls libc for I/O.

@inline(__always)
func retrying<T: FixedWidthInteger>(_ body: () -> T) throws -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let error = Errno.current
        if error != .interrupted { throw error }
    }
}

@inline(__always)
func check(_ result: Int32) throws {
    if result == -1 { throw Errno.current }
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

    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try retrying { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    static func pread(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, _ offset: Int64) throws -> Int {
        try retrying { Glibc.pread(fd, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws -> Int {
        try retrying { Glibc.write(fd, buffer.baseAddress, buffer.count) }
    }

    static func pwrite(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, _ offset: Int64) throws -> Int {
        try retrying { Glibc.pwrite(fd, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    static func fsync(_ fd: Int32) throws { _ = try retrying { Glibc.fsync(fd) } }
    static func fdatasync(_ fd: Int32) throws { _ = try retrying { Glibc.fdatasync(fd) } }
    static func syncfs(_ fd: Int32) throws { _ = try retrying { cnimbus_syncfs(fd) } }
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
        _ = try withCPath(path) { p in try retrying { Glibc.unlinkat(dir, p, flags) } }
    }

    static func renameat2(_ fromDir: Int32, _ from: SystemPath, _ toDir: Int32, _ to: SystemPath,
                          _ flags: UInt32) throws {
        _ = try withCPath(from) { f in
            try withCPath(to) { t in try retrying { cnimbus_renameat2(fromDir, f, toDir, t, flags) } }
        }
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
        try retrying { cnimbus_copy_file_range(input, &inOffset, output, &outOffset, count) }
    }

    static func ficlone(_ dest: Int32, _ source: Int32) throws {
        _ = try retrying { cnimbus_ficlone(dest, source) }
    }

    static func fstatvfs(_ fd: Int32) throws -> statvfs {
        var st = statvfs()
        _ = try retrying { Glibc.fstatvfs(fd, &st) }
        return st
    }

    static func pipe() throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        _ = try retrying { cnimbus_pipe_cloexec(&fds) }
        return (fds[0], fds[1])
    }
}
