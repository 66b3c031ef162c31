import Glibc

/// A POSIX error number with Swift names for the values Nimbus reacts to.
public struct Errno: Error, RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno`.
    static var current: Errno { Errno(rawValue: errno) }

    public static let notPermitted = Errno(rawValue: EPERM)
    public static let noSuchFile = Errno(rawValue: ENOENT)
    public static let noDeviceOrAddress = Errno(rawValue: ENXIO)
    public static let interrupted = Errno(rawValue: EINTR)
    public static let ioError = Errno(rawValue: EIO)
    public static let badFileDescriptor = Errno(rawValue: EBADF)
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    public static let noMemory = Errno(rawValue: ENOMEM)
    public static let permissionDenied = Errno(rawValue: EACCES)
    public static let busy = Errno(rawValue: EBUSY)
    public static let fileExists = Errno(rawValue: EEXIST)
    public static let crossDevice = Errno(rawValue: EXDEV)
    public static let notDirectory = Errno(rawValue: ENOTDIR)
    public static let isDirectory = Errno(rawValue: EISDIR)
    public static let invalidArgument = Errno(rawValue: EINVAL)
    public static let tooManyOpenFiles = Errno(rawValue: EMFILE)
    public static let noSpace = Errno(rawValue: ENOSPC)
    public static let readOnlyFileSystem = Errno(rawValue: EROFS)
    public static let brokenPipe = Errno(rawValue: EPIPE)
    public static let nameTooLong = Errno(rawValue: ENAMETOOLONG)
    public static let notImplemented = Errno(rawValue: ENOSYS)
    public static let directoryNotEmpty = Errno(rawValue: ENOTEMPTY)
    public static let tooManySymlinks = Errno(rawValue: ELOOP)
    public static let noData = Errno(rawValue: ENODATA)
    public static let notSupported = Errno(rawValue: EOPNOTSUPP)
    public static let quotaExceeded = Errno(rawValue: EDQUOT)
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    public static let connectionReset = Errno(rawValue: ECONNRESET)
    public static let textFileBusy = Errno(rawValue: ETXTBSY)
    public static let staleHandle = Errno(rawValue: ESTALE)

    /// True for errors that mean "the disk is full", whatever the filesystem calls it.
    public var isOutOfSpace: Bool { self == .noSpace || self == .quotaExceeded }

    public var description: String { String(cString: strerror(rawValue)) }
}

/// An `Errno` together with the operation and the path it concerns, for logs and users.
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
