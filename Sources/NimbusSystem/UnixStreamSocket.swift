import CNimbus
import Glibc
import NimbusVocabulary

/// A Unix stream socket: the transport of the control protocol (DESIGN §7). Always
/// close-on-exec; sends never raise SIGPIPE (a vanished peer is an `EPIPE` error instead).
/// Every failure is a `SystemError` naming the operation and the socket's path (for an
/// accepted connection, the listener's); `Errno(of:)` gives its errno to match on.
public struct UnixStreamSocket: Sendable {
    public let descriptor: FileDescriptor
    /// The socket file this socket was connected to, listens on or was accepted from.
    public let path: String

    public init(descriptor: FileDescriptor, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    private static func makeSocket(for path: String) throws -> UnixStreamSocket {
        UnixStreamSocket(descriptor: FileDescriptor(rawValue: try attributing("socket", path) { try Sys.unixSocket(SOCK_STREAM) }),
                         path: path)
    }

    /// Connects to the socket at `path`; the result is blocking. With `timeout`, a listener
    /// whose backlog stays full (a daemon that does not accept) makes this fail with `EAGAIN`
    /// (`Errno.wouldBlock`) once `timeout` has passed, instead of waiting for as long as it
    /// takes (after an interrupting signal it connects again, so up to twice that); sends on
    /// the result are then bounded by it too (`SO_SNDTIMEO`).
    /// The C function is `connect`.
    public static func connect(to path: String, timeout: Duration? = nil) throws -> UnixStreamSocket {
        let socket = try makeSocket(for: path)
        do {
            try socket.connect(timeout: timeout)
        } catch {
            socket.close()
            throw error
        }
        return socket
    }

    /// Connects to `path` without ever waiting: the result is non-blocking. A listener whose
    /// backlog is full fails at once (`EAGAIN`) instead of stalling the caller, which is what
    /// a client of an optional service (the desktop's session bus) wants.
    public static func connectNonBlocking(to path: String) throws -> UnixStreamSocket {
        let socket = try makeSocket(for: path)
        do {
            try socket.setNonBlocking(true)
            try socket.connect(timeout: nil)
        } catch {
            socket.close()
            throw error
        }
        return socket
    }

    /// connect(2) to `path`, with each wait for room in a full backlog bounded by `timeout`
    /// (`SO_SNDTIMEO`, then `EAGAIN`); no new attempt after it has passed.
    private func connect(timeout: Duration?) throws {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        try attributing("connect", path) {
            if let timeout { try Sys.setSendTimeout(descriptor.rawValue, timeout) }
            try withSocketAddress(path) { address, length in
                while true {
                    do {
                        return try Sys.connect(descriptor.rawValue, address, length)
                    } catch let error as Errno where error == .interrupted {
                        // A signal came while the connect waited for room in the backlog.
                        // Unlike TCP's, a Unix connect leaves nothing under way then (poll
                        // would say "writable" at once, and the socket is not connected):
                        // connect again, while there is time.
                        if let deadline, ContinuousClock.now >= deadline { throw Errno.wouldBlock }
                    }
                }
            }
        }
    }

    /// Waits up to `timeout` (nil: no limit) until the socket is ready for `events` (or hung
    /// up); false when the time ran out. The C function is `poll`.
    public func wait(for events: PollEvents, timeout: Duration?) throws -> Bool {
        try attributing("poll", path) { try Sys.poll(descriptor.rawValue, events.rawValue, timeout) }
    }

    /// A non-blocking listening socket at `path`, mode 0600. A socket file already there is
    /// replaced only when nothing answers on it (a daemon that crashed); if another process
    /// is listening, this throws `EADDRINUSE`. The C functions are `bind` and `listen`.
    public static func listen(at path: String, backlog: Int32 = 128) throws -> UnixStreamSocket {
        let socket = try makeSocket(for: path)
        do {
            do {
                try socket.bind()
            } catch let error as Errno where error == .addressInUse {
                try removeStaleSocket(at: path)
                try socket.bind()
            }
            // bind(2) applied the umask; the directory (0700) already keeps others out, and
            // this makes the socket itself 0600 as DESIGN §7 asks.
            try attributing("chmod", path) { try Sys.chmod(SystemPath(path), 0o600) }
            try attributing("listen", path) { try Sys.listen(socket.descriptor.rawValue, backlog) }
            try socket.setNonBlocking(true)
        } catch {
            socket.close()
            throw (error as? Errno).map { $0.at("bind", path) } ?? error
        }
        return socket
    }

    /// Throws a bare `Errno`, for `listen` to tell `EADDRINUSE` apart.
    private func bind() throws {
        try withSocketAddress(path) { address, length in
            try Sys.bind(descriptor.rawValue, address, length)
        }
    }

    /// Unlinks `path` if it is a socket nobody listens on; throws `EADDRINUSE` if someone
    /// does, and `EEXIST` if it is not a socket at all (never delete a user's file).
    private static func removeStaleSocket(at path: String) throws {
        let metadata = try Sys.fstatat(AT_FDCWD, SystemPath(path), AT_SYMLINK_NOFOLLOW)
        guard metadata.st_mode & S_IFMT == S_IFSOCK else { throw Errno.fileExists }
        if let live = try? connect(to: path) {
            live.close()
            throw Errno.addressInUse
        }
        try Sys.unlinkat(AT_FDCWD, SystemPath(path), 0)
    }

    /// The next pending connection, non-blocking and close-on-exec; nil when none is
    /// waiting. The C function is `accept4`.
    public func accept() throws -> UnixStreamSocket? {
        do {
            return UnixStreamSocket(descriptor: FileDescriptor(rawValue: try Sys.accept(descriptor.rawValue)), path: path)
        } catch let error as Errno where error == .wouldBlock || error == .connectionAborted {
            return nil
        } catch let error as Errno {
            throw error.at("accept", path)
        }
    }

    /// The process at the other end, as the kernel recorded it when it connected.
    /// The C option is `SO_PEERCRED`.
    public func peerCredentials() throws -> (pid: Int32, uid: UInt32, gid: UInt32) {
        try attributing("SO_PEERCRED", path) { try Sys.peerCredentials(descriptor.rawValue) }
    }

    public func setNonBlocking(_ on: Bool) throws {
        try attributing("fcntl", path) { try Sys.setNonBlocking(descriptor.rawValue, on) }
    }

    /// Sends what the socket takes now (all of it on a blocking socket, unless interrupted
    /// by a signal after some bytes); throws `EAGAIN` (`Errno.wouldBlock`) when it takes nothing.
    /// The C function is `send` with `MSG_NOSIGNAL`.
    public func send(_ bytes: UnsafeRawBufferPointer) throws -> Int {
        if bytes.isEmpty { return 0 }
        return try attributing("send", path) { try Sys.send(descriptor.rawValue, bytes) }
    }

    /// Sends every byte, looping over partial sends (for blocking sockets).
    public func sendAll(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                offset += try send(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
            }
        }
    }

    /// Reads what is there: 0 means the peer closed its end; throws `EAGAIN` on a
    /// non-blocking socket with nothing to read. The C function is `recv`.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try attributing("receive", path) { try Sys.receive(descriptor.rawValue, buffer) }
    }

    /// Stops sending (the peer reads end of file) but keeps receiving. The C function is
    /// `shutdown`.
    public func shutdownWriting() throws {
        try attributing("shutdown", path) { try Sys.shutdownWriting(descriptor.rawValue) }
    }

    public func close() { try? descriptor.close() }
}
