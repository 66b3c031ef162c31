/// A POSIX error number with Swift names for the values Nimbus reacts to. The numbers are
/// Linux's (asm-generic, as on x86-64 and arm64), written out so this module needs no libc;
/// `ErrnoTests` checks each against Glibc. `Errno.current` (reading `errno`) is NimbusSystem's.
public struct Errno: Error, RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    // Each constant the code matches on, with when we see it and what we do. The C name is
    // beside the number.

    /// An operation the kernel forbids whatever the mode bits (an immutable file, an xattr
    /// namespace, `openat2` in a sandbox): xattrs report "not supported", `openat2` falls back,
    /// the watcher skips the directory.
    public static let notPermitted = Errno(rawValue: 1)  // EPERM
    /// Nothing at the path (or a parent is missing): usually a file deleted under us; the
    /// scan and the plan take it as gone, the client as "daemon not running".
    public static let noSuchFile = Errno(rawValue: 2)  // ENOENT
    /// `SEEK_DATA` past the last data of a sparse file: only a hole is left, the copy ends.
    public static let noDeviceOrAddress = Errno(rawValue: 6)  // ENXIO
    /// A signal arrived before the call could finish: `retrying` makes the call again;
    /// `connect` waits for the connection instead (a second connect says `EALREADY`).
    public static let interrupted = Errno(rawValue: 4)  // EINTR
    /// The disk or the network mount failed a read or write: the operation fails with the
    /// path named; a reader of a placeholder whose fetch failed is denied with it.
    public static let ioError = Errno(rawValue: 5)  // EIO
    /// A descriptor that is not open (or not open for this): a bug in Nimbus, never a
    /// condition to handle; see `bugChecked` in Syscalls.swift.
    public static let badFileDescriptor = Errno(rawValue: 9)  // EBADF
    /// A pointer outside our memory passed to the kernel: a bug in Nimbus, like EBADF.
    public static let badAddress = Errno(rawValue: 14)  // EFAULT
    /// A non-blocking descriptor has nothing to read or no room to write now (`EAGAIN`, the
    /// same number as `EWOULDBLOCK`): wait in poll and try again; a held `flock` means
    /// another daemon owns the journal.
    public static let wouldBlock = Errno(rawValue: 11)  // EAGAIN
    /// The kernel is out of memory for this call: failed like any error, with the path.
    public static let noMemory = Errno(rawValue: 12)  // ENOMEM
    /// The mode bits refuse us (a directory we may not read, a guarded placeholder at mode
    /// 000): the watcher skips it, placeholder code knows it as guarded.
    public static let permissionDenied = Errno(rawValue: 13)  // EACCES
    /// The target is in use (a mount point, a capability we may not set): reported.
    public static let busy = Errno(rawValue: 16)  // EBUSY
    /// The name is taken: exclusive creates (`O_EXCL`, `link`, `RENAME_NOREPLACE`) lost a
    /// race, so another name is tried, or it is a conflict; `mkdir` of an existing directory
    /// is fine.
    public static let fileExists = Errno(rawValue: 17)  // EEXIST
    /// A rename or clone across filesystems, or `openat2(RESOLVE_BENEATH)` refusing an
    /// escape: the copy falls back to bytes; a path that escapes its root is refused.
    public static let crossDevice = Errno(rawValue: 18)  // EXDEV
    /// A path component is not a directory (a file replaced a folder): the path is gone.
    public static let notDirectory = Errno(rawValue: 20)  // ENOTDIR
    /// A directory where a file was expected (the socket path, a file being written):
    /// reported with the path.
    public static let isDirectory = Errno(rawValue: 21)  // EISDIR
    /// The kernel refuses the arguments: for `FICLONE`, `copy_file_range` and `SEEK_DATA` it
    /// means "not on this filesystem", and the next method is tried; else reported.
    public static let invalidArgument = Errno(rawValue: 22)  // EINVAL
    /// This process has no descriptor left (`RLIMIT_NOFILE`): the control server stops
    /// accepting for a moment instead of spinning.
    public static let tooManyOpenFiles = Errno(rawValue: 24)  // EMFILE
    /// The whole system has no descriptor left: handled as `tooManyOpenFiles`.
    public static let tooManyOpenFilesInSystem = Errno(rawValue: 23)  // ENFILE
    /// The disk is full: the copy fails and is retried later, the file shows state error
    /// with what to do; a reader of a placeholder is denied with it.
    public static let noSpace = Errno(rawValue: 28)  // ENOSPC
    /// The filesystem is mounted read-only: the pair reports it in plain English.
    public static let readOnlyFileSystem = Errno(rawValue: 30)  // EROFS
    /// The reader of a socket or pipe went away: that client is closed quietly.
    public static let brokenPipe = Errno(rawValue: 32)  // EPIPE
    /// A name or socket path too long for the kernel: reported with the path (the client
    /// suggests a shorter `--socket`).
    public static let nameTooLong = Errno(rawValue: 36)  // ENAMETOOLONG
    /// The kernel lacks the call (`copy_file_range`, `openat2` on an old kernel): the
    /// fallback is used.
    public static let notImplemented = Errno(rawValue: 38)  // ENOSYS
    /// `rmdir` of a directory with something in it: the directory is kept.
    public static let directoryNotEmpty = Errno(rawValue: 39)  // ENOTEMPTY
    /// A symlink where none may be (`O_NOFOLLOW`, `RESOLVE_NO_SYMLINKS`): the path is not
    /// followed, it is treated as gone or refused.
    public static let tooManySymlinks = Errno(rawValue: 40)  // ELOOP
    /// The extended attribute is not set: read as "no state recorded".
    public static let noData = Errno(rawValue: 61)  // ENODATA
    /// The filesystem does not do this (xattrs on a symlink or a FAT disk, `FICLONE`, a
    /// `renameat2` flag): the feature is off for that filesystem, or the fallback is used.
    public static let notSupported = Errno(rawValue: 95)  // EOPNOTSUPP
    /// The user's disk quota is used up: handled as `noSpace`.
    public static let quotaExceeded = Errno(rawValue: 122)  // EDQUOT
    /// Nothing listens on the socket file: the daemon is not running (the client says so; a
    /// stale socket file of a crashed daemon is replaced).
    public static let connectionRefused = Errno(rawValue: 111)  // ECONNREFUSED
    /// The peer reset the connection (the session bus went away): the connection is closed.
    public static let connectionReset = Errno(rawValue: 104)  // ECONNRESET
    /// A client connected and gave up before `accept` took it: nothing to accept.
    public static let connectionAborted = Errno(rawValue: 103)  // ECONNABORTED
    /// Someone already listens on the socket path: another daemon runs on this instance.
    public static let addressInUse = Errno(rawValue: 98)  // EADDRINUSE
    /// The file is being executed, so it cannot be written: reported with the path.
    public static let textFileBusy = Errno(rawValue: 26)  // ETXTBSY
    /// A network filesystem's handle went stale (the file was replaced on the server): the
    /// watcher skips it, the next scan sees the truth.
    public static let staleHandle = Errno(rawValue: 116)  // ESTALE
    /// A file larger than the limit for what is read whole (a placeholder, a config): the
    /// file is not read as a placeholder; reported with the path.
    public static let fileTooLarge = Errno(rawValue: 27)  // EFBIG
    /// A buffer too small for an xattr's value: asked again with a larger one.
    public static let resultTooLarge = Errno(rawValue: 34)  // ERANGE
    /// An ioctl this file does not have (`FICLONE` on most filesystems): not cloned, copied.
    public static let inappropriateIoctl = Errno(rawValue: 25)  // ENOTTY

    /// True for errors that mean "the disk is full", whatever the filesystem calls it.
    public var isOutOfSpace: Bool { self == .noSpace || self == .quotaExceeded }

    /// What `strerror` says in the C locale (the daemon never sets another one).
    public var description: String {
        Self.messages.indices.contains(Int(rawValue)) && !Self.messages[Int(rawValue)].isEmpty
            ? Self.messages[Int(rawValue)] : "Unknown error \(rawValue)"
    }
}

/// An `Errno` together with the operation and the path it concerns, for logs and users: the
/// one shape of a syscall failure above the seam. `FileDescriptor` and `Sys` throw a bare
/// `Errno` (a descriptor knows no path, as in swift-system); every type that knows its path
/// or its peer (the filesystems, sockets, datagrams, child processes, the journal's
/// directory) attaches it with `at(_:_:)` or `attributing`. Errors that are not syscall
/// failures (protocol, configuration, a refused copy) keep their own types, each saying why.
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    public let errno: Errno
    public let operation: String
    public let path: String

    public init(_ errno: Errno, _ operation: String, _ path: String) {
        self.errno = errno
        self.operation = operation
        self.path = path
    }

    public var description: String { "\(operation) \(path): \(errno)" }
}

extension Errno {
    /// Attach the operation and path, for errors that travel upward.
    public func at(_ operation: String, _ path: some CustomStringConvertible) -> SystemError {
        SystemError(self, operation, path.description)
    }
}

extension Errno {
    /// The errno behind `error`, whether it was thrown bare (by `FileDescriptor`, which knows
    /// no path) or as a `SystemError`; nil for any other error. Lets a caller match on the
    /// cause (`Errno(of: error) == .wouldBlock`) whichever shape a layer throws.
    public init?(of error: any Error) {
        switch error {
        case let error as Errno: self = error
        case let error as SystemError: self = error.errno
        default: return nil
        }
    }
}
