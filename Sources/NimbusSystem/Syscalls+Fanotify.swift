import CNimbus
import Glibc
import NimbusVocabulary

// The seam for fanotify, hole punching and capabilities. Like Syscalls.swift, each function is
// one libc call that retries EINTR and throws `Errno`.

extension Sys {
    /// Creates a fanotify group. The corresponding C function is `fanotify_init`.
    static func fanotifyInit(_ flags: UInt32, eventFileFlags: UInt32) throws -> Int32 {
        try retrying { cnimbus_fanotify_init(flags, eventFileFlags) }
    }

    /// Adds or removes `mask` on the inode `name` names relative to `directory` (a final
    /// symlink is never followed: `FAN_MARK_DONT_FOLLOW` is the caller's to pass).
    /// The corresponding C function is `fanotify_mark`.
    static func fanotifyMark(_ group: Int32, _ flags: UInt32, _ mask: UInt64, _ directory: Int32,
                             _ name: SystemPath) throws {
        _ = try withCPath(name) { p in try retrying { cnimbus_fanotify_mark(group, flags, mask, directory, p) } }
    }

    /// Adds or removes `mask` on the inode of the open (not `O_PATH`) file `fd`.
    /// The corresponding C function is `fanotify_mark`.
    static func fanotifyMark(_ group: Int32, _ flags: UInt32, _ mask: UInt64, file fd: Int32) throws {
        _ = try retrying { cnimbus_fanotify_mark(group, flags, mask, fd, nil) }
    }

    /// Frees the blocks of `length` bytes from `offset`, the size unchanged: they read as
    /// zeros afterwards. The corresponding C function is `fallocate(PUNCH_HOLE | KEEP_SIZE)`.
    static func punchHole(_ fd: Int32, _ offset: Int64, _ length: Int64) throws {
        _ = try retrying { cnimbus_punch_hole(fd, offset, length) }
    }

    /// Removes attribute `name` of an open file. The corresponding C function is `fremovexattr`.
    static func fremovexattr(_ fd: Int32, _ name: String) throws {
        _ = try retrying { cnimbus_fremovexattr(fd, name) }
    }

    /// The value of attribute `name` of an open file into `buffer`.
    /// The corresponding C function is `fgetxattr`.
    static func fgetxattr(_ fd: Int32, _ name: String, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try retrying { CNimbus.fgetxattr(fd, name, buffer.baseAddress, buffer.count) }
    }

    /// The calling thread's effective, permitted and inheritable capability sets, each as a
    /// 64-bit mask. The corresponding C function is `capget`.
    static func capget() throws -> (effective: UInt64, permitted: UInt64, inheritable: UInt64) {
        var effective: [UInt32] = [0, 0], permitted: [UInt32] = [0, 0], inheritable: [UInt32] = [0, 0]
        _ = try retrying { cnimbus_capget(&effective, &permitted, &inheritable) }
        func joined(_ words: [UInt32]) -> UInt64 { UInt64(words[0]) | UInt64(words[1]) << 32 }
        return (joined(effective), joined(permitted), joined(inheritable))
    }

    /// Sets the calling thread's capability sets. The corresponding C function is `capset`.
    static func capset(effective: UInt64, permitted: UInt64, inheritable: UInt64) throws {
        func split(_ mask: UInt64) -> [UInt32] { [UInt32(truncatingIfNeeded: mask), UInt32(truncatingIfNeeded: mask >> 32)] }
        _ = try retrying { cnimbus_capset(split(effective), split(permitted), split(inheritable)) }
    }

    /// prctl(2) with integer arguments. The corresponding C function is `prctl`.
    @discardableResult
    static func prctl(_ option: Int32, _ a2: UInt = 0, _ a3: UInt = 0, _ a4: UInt = 0, _ a5: UInt = 0) throws -> Int32 {
        try retrying { cnimbus_prctl(option, a2, a3, a4, a5) }
    }
}

extension Sys {
    /// A second descriptor for the same open file. The C function is `fcntl(F_DUPFD_CLOEXEC)`.
    static func duplicate(_ fd: Int32) throws -> Int32 {
        try retrying { fcntl(fd, F_DUPFD_CLOEXEC, 0) }
    }
}

extension FileDescriptor {
    /// A second descriptor for the same open file (offset, flags and the kernel's "raises no
    /// events" of a fanotify event's file shared), closed independently; close-on-exec.
    public func duplicate() throws -> FileDescriptor { FileDescriptor(rawValue: try Sys.duplicate(rawValue)) }
}
