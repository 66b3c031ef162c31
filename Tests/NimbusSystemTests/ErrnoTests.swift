import Glibc
import NimbusVocabulary
import Testing
@testable import NimbusSystem

/// NimbusVocabulary writes out Linux's error numbers and glibc's messages so it needs no
/// libc; these check them against Glibc itself.
@Suite struct ErrnoTests {
    @Test func namedNumbersAreGlibcs() {
        let pairs: [(Errno, Int32, String)] = [
            (.notPermitted, EPERM, "EPERM"), (.noSuchFile, ENOENT, "ENOENT"), (.noDeviceOrAddress, ENXIO, "ENXIO"),
            (.interrupted, EINTR, "EINTR"), (.ioError, EIO, "EIO"), (.badFileDescriptor, EBADF, "EBADF"),
            (.wouldBlock, EAGAIN, "EAGAIN"), (.noMemory, ENOMEM, "ENOMEM"), (.permissionDenied, EACCES, "EACCES"),
            (.busy, EBUSY, "EBUSY"), (.fileExists, EEXIST, "EEXIST"), (.crossDevice, EXDEV, "EXDEV"),
            (.notDirectory, ENOTDIR, "ENOTDIR"), (.isDirectory, EISDIR, "EISDIR"),
            (.invalidArgument, EINVAL, "EINVAL"), (.tooManyOpenFiles, EMFILE, "EMFILE"), (.noSpace, ENOSPC, "ENOSPC"),
            (.readOnlyFileSystem, EROFS, "EROFS"), (.brokenPipe, EPIPE, "EPIPE"),
            (.nameTooLong, ENAMETOOLONG, "ENAMETOOLONG"), (.notImplemented, ENOSYS, "ENOSYS"),
            (.directoryNotEmpty, ENOTEMPTY, "ENOTEMPTY"), (.tooManySymlinks, ELOOP, "ELOOP"),
            (.noData, ENODATA, "ENODATA"), (.notSupported, EOPNOTSUPP, "EOPNOTSUPP"),
            (.quotaExceeded, EDQUOT, "EDQUOT"), (.connectionRefused, ECONNREFUSED, "ECONNREFUSED"),
            (.connectionReset, ECONNRESET, "ECONNRESET"), (.textFileBusy, ETXTBSY, "ETXTBSY"),
            (.staleHandle, ESTALE, "ESTALE"), (.fileTooLarge, EFBIG, "EFBIG"), (.resultTooLarge, ERANGE, "ERANGE"),
            (.inappropriateIoctl, ENOTTY, "ENOTTY"),
            (.badAddress, EFAULT, "EFAULT"), (.tooManyOpenFilesInSystem, ENFILE, "ENFILE"),
            (.connectionAborted, ECONNABORTED, "ECONNABORTED"), (.addressInUse, EADDRINUSE, "EADDRINUSE"),
        ]
        for (errno, number, name) in pairs {
            #expect(errno.rawValue == number, "\(name) is \(number) in Glibc, \(errno.rawValue) in NimbusVocabulary")
        }
    }

    /// The daemon never calls `setlocale`, so `strerror` speaks the C locale, as the table does.
    @Test func descriptionsAreStrerrors() {
        for number in Int32(-1)...140 {
            #expect(Errno(rawValue: number).description == String(cString: strerror(number)), "errno \(number)")
        }
    }
}
