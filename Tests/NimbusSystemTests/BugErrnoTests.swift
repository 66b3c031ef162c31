#if DEBUG
import Glibc
import NimbusVocabulary
import Testing
@testable import NimbusSystem

/// EBADF and EFAULT come only from a bug in Nimbus (a descriptor used after its close, a bad
/// pointer), never from the disk or the user: a debug build, so every test run, stops at the
/// call (`bugChecked` in Syscalls.swift). Each case runs in a child process (`processExitsWith`).
/// A release build throws the errno like any other; these tests exist in debug builds only.
@Suite struct BugErrnoTests {
    /// A number no descriptor of a test process has (the soft limit is far below).
    static let neverOpen: Int32 = 1 << 30

    @Test func readingADescriptorThatIsNotOpenStops() async {
        await #expect(processExitsWith: .failure) {
            var byte: UInt8 = 0
            _ = try? withUnsafeMutableBytes(of: &byte) { try FileDescriptor(rawValue: BugErrnoTests.neverOpen).read(into: $0) }
        }
    }

    /// The directory-stream calls, which report errors their own way (fdopendir sets errno,
    /// readdir only errno), stop at EBADF too.
    @Test func aDirectoryStreamOnADescriptorThatIsNotOpenStops() async {
        await #expect(processExitsWith: .failure) {
            _ = try? Sys.openDirectoryStream(BugErrnoTests.neverOpen)
        }
    }

    /// posix_fadvise returns its error number instead of setting errno: also checked.
    @Test func adviceOnADescriptorThatIsNotOpenStops() async {
        await #expect(processExitsWith: .failure) {
            _ = try? Sys.fadvise(BugErrnoTests.neverOpen, POSIX_FADV_SEQUENTIAL)
        }
    }

    /// What is not a bug is thrown as it is: a missing directory is ENOENT, not a stop.
    @Test func anOrdinaryFailureIsThrown() throws {
        #expect(throws: Errno.noSuchFile) {
            _ = try FileDescriptor.open(SystemPath("/nonexistent-\(getpid())/x"), [.directory])
        }
    }
}
#endif
