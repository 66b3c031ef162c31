import CNimbus
import Glibc
import NimbusVocabulary

// The seam for sockets, datagrams, poll, descriptor flags and child processes. Like
// Syscalls.swift, each function is one libc call that retries EINTR (in `retrying`) and
// throws `Errno`; the socket types attach the operation and path.

extension Sys {
    /// A close-on-exec Unix socket of `type` (`SOCK_STREAM`, `SOCK_DGRAM`).
    /// The corresponding C function is `socket`.
    static func unixSocket(_ type: __socket_type) throws -> Int32 {
        try retrying { Glibc.socket(AF_UNIX, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
    }

    /// Connects `fd` to `address`. Not retried here on `EINTR`: the caller decides, with its
    /// deadline (for a Unix socket, an interrupted connect left nothing under way, so it
    /// connects again). In debug builds `SyscallFaults` can interrupt it as it does the calls
    /// made through `retrying`. The corresponding C function is `connect`.
    static func connect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) throws {
        #if DEBUG
        if SyscallFaults.interruptsThisAttempt() { throw Errno.interrupted }
        #endif
        try check(Glibc.connect(fd, address, length))
    }

    /// Bounds how long a blocking send on `fd` waits for room, and on a Unix stream socket
    /// how long a connect waits for room in the listener's full backlog: either then fails
    /// with `EAGAIN`. A zero timeval would mean "no limit", so the least is one microsecond.
    /// The corresponding C function is `setsockopt(SO_SNDTIMEO)`.
    static func setSendTimeout(_ fd: Int32, _ timeout: Duration) throws {
        let clamped = max(timeout, .zero)
        let seconds = clamped.components.seconds
        let microseconds = (clamped - .seconds(seconds)).nanosecondCount / Duration.nanosecondsPerMicrosecond
        var limit = timeval(tv_sec: Int(seconds), tv_usec: Int(microseconds))
        if limit.tv_sec == 0 && limit.tv_usec == 0 { limit.tv_usec = 1 }
        _ = try retrying { Glibc.setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size)) }
    }

    /// The corresponding C function is `bind`.
    static func bind(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) throws {
        _ = try retrying { Glibc.bind(fd, address, length) }
    }

    /// The corresponding C function is `listen`.
    static func listen(_ fd: Int32, _ backlog: Int32) throws {
        _ = try retrying { Glibc.listen(fd, backlog) }
    }

    /// The next pending connection, already close-on-exec and non-blocking (no window in
    /// which a child could inherit it). The corresponding C function is `accept4`.
    static func accept(_ fd: Int32) throws -> Int32 {
        try retrying { cnimbus_accept_cloexec_nonblock(fd) }
    }

    /// Sends on a connected stream socket, never raising SIGPIPE (`EPIPE` instead); without
    /// `waiting`, a socket without room fails with `EAGAIN` instead of waiting for it, even
    /// when the socket blocks. The corresponding C function is `send` with `MSG_NOSIGNAL`
    /// (and `MSG_DONTWAIT`).
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, waiting: Bool = true) throws -> Int {
        let count = transferCount(bytes.count)
        let flags = Int32(MSG_NOSIGNAL) | (waiting ? 0 : Int32(MSG_DONTWAIT))
        return try retrying { Glibc.send(fd, bytes.baseAddress, count, flags) }
    }

    /// Receives from a stream socket; 0 when the peer closed its end.
    /// The corresponding C function is `recv`.
    static func receive(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = transferCount(buffer.count)
        return try retrying { Glibc.recv(fd, buffer.baseAddress, count, 0) }
    }

    /// Receives one whole datagram (never cut short by a test's transfer limit: a datagram
    /// cut short is lost, not continued). The corresponding C function is `recv`.
    static func receiveDatagram(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try retrying { Glibc.recv(fd, buffer.baseAddress, buffer.count, 0) }
    }

    /// Sends one datagram to `address` without waiting for the receiver.
    /// The corresponding C function is `sendto` with `MSG_DONTWAIT | MSG_NOSIGNAL`.
    static func sendDatagram(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, to address: UnsafePointer<sockaddr>,
                             _ length: socklen_t) throws {
        _ = try retrying {
            Glibc.sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), address, length)
        }
    }

    /// Sends one datagram to `path` carrying `passed` (`SCM_RIGHTS`).
    /// The corresponding C function is `sendmsg`.
    static func sendDatagram(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, passing passed: Int32,
                             to path: String) throws {
        _ = try retrying { cnimbus_send_with_descriptor(fd, bytes.baseAddress, bytes.count, passed, path) }
    }

    /// Receives one datagram and the descriptor it carried (-1 when none).
    /// The corresponding C function is `recvmsg`.
    static func receiveDatagram(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer,
                                descriptor: inout Int32) throws -> Int {
        try retrying { cnimbus_receive_with_descriptor(fd, buffer.baseAddress, buffer.count, &descriptor) }
    }

    /// Stops sending; the peer reads end of file. The corresponding C function is `shutdown`.
    static func shutdownWriting(_ fd: Int32) throws {
        _ = try retrying { Glibc.shutdown(fd, Int32(SHUT_WR)) }
    }

    /// The process, user and group at the other end of a Unix socket.
    /// The corresponding C option is `SO_PEERCRED`.
    static func peerCredentials(_ fd: Int32) throws -> (pid: Int32, uid: UInt32, gid: UInt32) {
        var pid: Int32 = 0, uid: UInt32 = 0, gid: UInt32 = 0
        _ = try retrying { cnimbus_peercred(fd, &pid, &uid, &gid) }
        return (pid, uid, gid)
    }

    /// Waits until `fd` is ready for `events` or `timeout` has passed (nil: no limit); true
    /// when it is ready (or hung up). After `EINTR` the wait restarts with the whole timeout.
    /// The corresponding C function is `poll`.
    static func poll(_ fd: Int32, _ events: Int16, _ timeout: Duration?) throws -> Bool {
        var entries = [pollfd(fd: fd, events: events, revents: 0)]
        return try poll(&entries, timeout) > 0
    }

    /// Sets or clears `O_NONBLOCK` in the file status flags.
    /// The corresponding C function is `fcntl(F_GETFL / F_SETFL)`.
    static func setNonBlocking(_ fd: Int32, _ on: Bool) throws {
        let flags = try retrying { fcntl(fd, F_GETFL) }
        let wanted = on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if wanted != flags { _ = try retrying { fcntl(fd, F_SETFL, wanted) } }
    }

    /// Makes `fd` close-on-exec (an inherited descriptor is not).
    /// The corresponding C function is `fcntl(F_SETFD)`.
    static func setCloseOnExec(_ fd: Int32) throws {
        _ = try retrying { fcntl(fd, F_SETFD, FD_CLOEXEC) }
    }

    /// chmod of `path`, following symlinks (for a socket file this process just bound).
    /// The corresponding C function is `chmod`.
    static func chmod(_ path: SystemPath, _ mode: mode_t) throws {
        _ = try withCPath(path) { p in try retrying { Glibc.chmod(p, mode) } }
    }

    /// A symlink's target (up to `capacity` bytes), for the magic links of /proc.
    /// The corresponding C function is `readlink`.
    static func readlink(_ path: SystemPath, capacity: Int) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: capacity)
        let count = try withCPath(path) { p in
            try retrying {
                buffer.withUnsafeMutableBufferPointer { b in
                    b.withMemoryRebound(to: CChar.self) { Glibc.readlink(p, $0.baseAddress!, capacity) }
                }
            }
        }
        return Array(buffer[..<count])
    }

    /// Waits for the child `pid` to end and returns its raw status.
    /// The corresponding C function is `waitpid`.
    static func waitForChild(_ pid: Int32) throws -> Int32 {
        var status: Int32 = 0
        _ = try retrying { waitpid(pid, &status, 0) }
        return status
    }
}

extension Sys {
    /// Whether another process has the file open for writing, asked with a read lease taken
    /// and given back at once: 0 when it is (the lease was refused for that), 1 when it is
    /// not, -1 when leases are not possible here (not the owner, a network filesystem).
    /// Not retried: -1 is an answer ("cannot tell"), not a failure.
    /// The corresponding C function is `fcntl(F_SETLEASE, F_RDLCK)`.
    static func probeReadLease(_ fd: Int32) -> Int32 { cnimbus_probe_read_lease(fd) }

    /// Whether another process has the file open at all, asked with a write lease; answers
    /// as `probeReadLease`. The corresponding C function is `fcntl(F_SETLEASE, F_WRLCK)`.
    static func probeWriteLease(_ fd: Int32) -> Int32 { cnimbus_probe_write_lease(fd) }

    /// Whether this process may access `path` as `mode` asks (`F_OK`, `X_OK`), following
    /// symlinks. The corresponding C function is `access`.
    static func access(_ path: SystemPath, _ mode: Int32) throws {
        _ = try withCPath(path) { p in try retrying { Glibc.access(p, mode) } }
    }

    /// Whether `fd` refers to a terminal. The corresponding C function is `isatty`.
    static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    /// The size of the terminal on `fd`. No retry: TIOCGWINSZ does not block, so it cannot be
    /// interrupted. The corresponding C function is `ioctl(TIOCGWINSZ)`.
    static func terminalSize(_ fd: Int32) throws -> winsize {
        var size = winsize()
        // Glibc's overlay offers a non-variadic ioctl taking a pointer.
        try check(ioctl(fd, UInt(TIOCGWINSZ), &size))
        return size
    }
}

extension Sys {
    /// Sleeps for `duration`. Its own EINTR loop, not `retrying`'s: after a signal it sleeps
    /// only what was left. The corresponding C function is `nanosleep`.
    static func sleep(_ duration: timespec) {
        var request = duration, remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    /// `path` with every symlink resolved, as raw bytes. The corresponding C function is
    /// `realpath`.
    static func realpath(_ path: SystemPath) throws -> [UInt8] {
        try withCPath(path) { p in
            guard let resolved = Glibc.realpath(p, nil) else { throw bugChecked(Errno.current) }
            defer { free(resolved) }
            return Array(UnsafeRawBufferPointer(start: resolved, count: strlen(resolved)))
        }
    }
}

extension Sys {
    /// Starts `executable` (looked up in PATH when it has no slash) with `argv` and `envp`,
    /// `passed` (-1: none) as its descriptor 3, every other descriptor above 2 closed, default
    /// signal actions. Returns the pid. posix_spawn returns the error number instead of
    /// setting errno, and is not interrupted (it waits for the child's exec internally).
    /// The corresponding C function is `posix_spawnp`.
    static func spawn(_ executable: String, _ argv: UnsafePointer<UnsafeMutablePointer<CChar>?>,
                      _ envp: UnsafePointer<UnsafeMutablePointer<CChar>?>, passing passed: Int32) throws -> Int32 {
        var pid: pid_t = 0
        let result = cnimbus_spawnp_passing(&pid, executable, argv, envp, passed)
        guard result == 0 else { throw bugChecked(Errno(rawValue: result)) }
        return pid
    }
}
