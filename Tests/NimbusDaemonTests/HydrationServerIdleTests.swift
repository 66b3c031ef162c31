import Foundation
import NimbusCore
import NimbusVocabulary
import Synchronization
import Testing
@testable import NimbusDaemon
@testable import NimbusSystem
import NimbusTestSupport

/// The hydration server's reader thread at idle (README, "idle CPU: no wake-ups"): it sleeps
/// until the kernel, a stop or a reader's fill-timeout needs it, and a failing group does not
/// make it spin. No fanotify here: the "group" is a descriptor that never has an event (the
/// read end of a pipe nobody writes), or one that always fails to read (a directory), so
/// these run without root. That an overdue reader is still answered at fill-timeout is
/// `HydrationServerTests.aReaderWaitingLongerThanTheFillTimeoutGetsEIO` (real kernel, root).
@Suite struct HydrationServerIdleTests {
    /// The server is woken once (new settings), then left idle for a second: it must not come
    /// back from its wait again. The loop before woke every 200 ms to look for a stop.
    @Test func anIdleServerDoesNotWakeUp() throws {
        let silent = try WakePipe()
        let server = try HydrationServer(group: FanotifyGroup(descriptor: silent.readEnd), cloudRoot: .currentDirectory,
                                         settings: .init(), log: .silent, completed: { _ in })
        defer { server.stop() }
        // Proves the thread is in its loop and answers a wake-up, so that the silence below is its own.
        server.update(.init())
        try Polling.wait("the server to take its wake-up", timeout: .seconds(30)) { server.wakeUps.load(ordering: .relaxed) >= 1 }
        let before = server.wakeUps.load(ordering: .relaxed)
        // Idleness is the absence of events: it can only be watched for a while.
        Thread.sleep(forTimeInterval: 1)
        #expect(server.wakeUps.load(ordering: .relaxed) == before, "the idle server woke up without a reason")
    }

    /// With nothing to wake it on its own, only the stop's wake-up can end the wait.
    @Test func stopEndsTheIdleWaitAtOnce() throws {
        let silent = try WakePipe()
        let server = try HydrationServer(group: FanotifyGroup(descriptor: silent.readEnd), cloudRoot: .currentDirectory,
                                         settings: .init(), log: .silent, completed: { _ in })
        let stopped = Atomic<Bool>(false)
        Thread {
            server.stop()
            stopped.store(true, ordering: .releasing)
        }.start()
        try Polling.wait("stop() to return", timeout: .seconds(30)) { stopped.load(ordering: .acquiring) }
    }

    /// A group whose reads fail at once (a directory reads as EISDIR, and polls as readable)
    /// is tried again after a back-off that doubles: 0.2 + 0.4 + 0.8 + 1.6 s, so at most
    /// five tries in three seconds (a fixed 0.2 s pause made 15).
    @Test func aFailingGroupBacksOff() throws {
        let directory = try FileDescriptor.open(SystemPath("/"), [.directory])
        defer { try? directory.close() }
        let server = try HydrationServer(group: FanotifyGroup(descriptor: directory), cloudRoot: .currentDirectory,
                                         settings: .init(), log: .silent, completed: { _ in })
        defer { server.stop() }  // Ends the back-off's wait: the test would take up to 10 s more otherwise.
        try Polling.wait("the first failed read", timeout: .seconds(30)) { server.wakeUps.load(ordering: .relaxed) >= 1 }
        // What is counted is how often it tries in a while: only a while can show it.
        Thread.sleep(forTimeInterval: 3)
        let tries = server.wakeUps.load(ordering: .relaxed)
        #expect(tries <= 6, "\(tries) reads in 3 s: the back-off does not grow")
    }
}
