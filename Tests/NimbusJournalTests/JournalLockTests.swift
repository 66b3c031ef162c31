import Dispatch
import NimbusSystem
import Testing
@testable import NimbusJournal

/// The journal's lock is an flock on its directory, which belongs to the open file, not to the
/// descriptor: a child process of this one holds a copy of every descriptor from its fork to
/// its exec, and with it the lock of a journal closed in the meantime. Here a second
/// descriptor of the directory stands for that copy.
@Suite struct JournalLockTests {
    /// Before, a journal closed and opened again while another test started a program failed
    /// at once with "in use by another process" (RecoveryTests, under load).
    @Test func aLockLetGoWhileWaitingIsTaken() throws {
        try withTemporaryDirectory { directory in
            try Journal.open(directory: directory.path) { _ in }.close()
            let childCopy = try FileDescriptor.open(directory.path, .directory)
            #expect(try childCopy.tryLockExclusive())
            // The child's exec closes its copy a moment later.
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) { try? childCopy.close() }
            // A generous wait: only a test machine stalled for half a minute could miss it.
            let journal = try Journal.open(directory: directory.path, lockWait: .seconds(30)) { _ in }
            try journal.close()
        }
    }

    /// Another daemon keeps its lock: after the wait, the clear error.
    @Test func aLockHeldLongerThanTheWaitIsRefused() throws {
        try withTemporaryDirectory { directory in
            try Journal.open(directory: directory.path) { _ in }.close()
            let otherDaemon = try FileDescriptor.open(directory.path, .directory)
            defer { try? otherDaemon.close() }
            #expect(try otherDaemon.tryLockExclusive())
            #expect(throws: JournalError.locked(directory.path)) {
                try Journal.open(directory: directory.path, lockWait: .milliseconds(50)) { _ in }
            }
        }
    }
}
