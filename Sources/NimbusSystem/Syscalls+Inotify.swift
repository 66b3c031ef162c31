import Glibc
import NimbusVocabulary

// The seam for watching: inotify, poll(2) and directory streams. Like Syscalls.swift, each
// function is one libc call that retries EINTR and throws `Errno`.

extension Sys {
    /// Creates an inotify instance that is close-on-exec and non-blocking: the watcher waits in
    /// `poll` (so it can also be woken), and a read finds the queue empty instead of blocking.
    /// The corresponding C function is `inotify_init1`.
    static func inotifyInit() throws -> Int32 {
        try retrying { inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK)) }
    }

    /// Adds a watch for `path` (or changes the mask of the watch its inode already has) and
    /// returns the watch descriptor. The corresponding C function is `inotify_add_watch`.
    static func inotifyAddWatch(_ fd: Int32, _ path: SystemPath, _ mask: UInt32) throws -> Int32 {
        try withCPath(path) { p in try retrying { inotify_add_watch(fd, p, mask) } }
    }

    /// Removes a watch; the kernel then queues `IN_IGNORED` for it.
    /// The corresponding C function is `inotify_rm_watch`.
    static func inotifyRemoveWatch(_ fd: Int32, _ watch: Int32) throws {
        _ = try retrying { inotify_rm_watch(fd, watch) }
    }

    /// Waits until one of `fds` is ready or `timeout` has passed (nil: no limit; zero or less:
    /// only looks). Returns how many descriptors are ready. The timeout becomes poll's
    /// milliseconds here and only here, rounded up (`Duration.pollMilliseconds`), so a deadline
    /// less than a millisecond away waits rather than spins. After `EINTR` the wait restarts
    /// with the whole timeout. The corresponding C function is `poll`.
    static func poll(_ fds: inout [pollfd], _ timeout: Duration?) throws -> Int32 {
        let milliseconds = pollTimeout(timeout)
        return try fds.withUnsafeMutableBufferPointer { buffer in
            try retrying { Glibc.poll(buffer.baseAddress, nfds_t(buffer.count), milliseconds) }
        }
    }

    /// poll's `timeout` argument for a wait of `timeout`: -1 for nil (no limit), 0 for none
    /// left, else the milliseconds rounded up.
    static func pollTimeout(_ timeout: Duration?) -> Int32 {
        timeout.map { $0.pollMilliseconds() } ?? -1
    }

    /// Turns an open directory descriptor into a stream for `readDirectoryEntry`; the stream
    /// owns the descriptor from then on. The corresponding C function is `fdopendir`.
    static func openDirectoryStream(_ fd: Int32) throws -> OpaquePointer {
        guard let stream = fdopendir(fd) else { throw bugChecked(Errno.current) }
        return stream
    }

    /// The next entry's name (raw bytes, "." and ".." included) and `d_type`, or nil at the
    /// end. The corresponding C function is `readdir`.
    static func readDirectoryEntry(_ stream: OpaquePointer) throws -> (name: [UInt8], type: UInt8)? {
        guard let (name, type) = try nextDirectoryEntry(stream) else { return nil }
        return (Array(UnsafeRawBufferPointer(start: name, count: strlen(name))), type)
    }

    /// Closes a directory stream and its descriptor. The corresponding C function is `closedir`.
    static func closeDirectoryStream(_ stream: OpaquePointer) throws {
        try check(closedir(stream))
    }
}
