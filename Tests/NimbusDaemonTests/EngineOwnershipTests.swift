import Foundation
import Testing
import NimbusVocabulary
@testable import NimbusDaemon

/// Who may call the engine (issue 15 point 2, the note at `SyncEngine`): once a thread has
/// claimed it, a debug build stops at an entry point called from another thread, or at a
/// journal write made there, instead of letting two threads share the journal unseen.
/// The checks exist in debug builds only, as these tests do.
#if DEBUG
@Suite struct EngineOwnershipTests {
    /// Runs `body` on a new thread and waits for it to end.
    static func onAnotherThread(_ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread {
            body()
            done.signal()
        }.start()
        done.wait()
    }

    /// Before any thread claims it (a test driving the engine from its own tasks), and on the
    /// owning thread after, every entry point may be called.
    @Test func theOwnerAndAnUnclaimedEngineMayCallEveryEntryPoint() throws {
        let pair = Pair()
        try pair.local.write(rp("a"), Array("one".utf8))
        Self.onAnotherThread { pair.engine.start() }
        pair.engine.claimOwnership()
        pair.engine.releaseExpiredDeletions()
        pair.engine.retryCommitIfDue()
        pair.engine.noteOpened(rp("a"))
        pair.sync()
        #expect(pair.content(pair.cloud, "a") == "one")
    }

    /// A pass from another thread than the owner's stops the process (in a child process:
    /// `processExitsWith`).
    @Test func aPassOffTheOwningThreadStops() async {
        await #expect(processExitsWith: .failure) {
            let pair = Pair()
            pair.engine.claimOwnership()
            EngineOwnershipTests.onAnotherThread { pair.engine.sync(nil) }
        }
    }

    /// The entry points the runtime calls at every turn are checked too (they were not before):
    /// letting kept deletions go removes files, and a held commit writes the journal.
    @Test func theTimedEntryPointsAreCheckedToo() async {
        await #expect(processExitsWith: .failure) {
            let pair = Pair()
            pair.engine.claimOwnership()
            EngineOwnershipTests.onAnotherThread { pair.engine.releaseExpiredDeletions() }
        }
        await #expect(processExitsWith: .failure) {
            let pair = Pair()
            pair.engine.claimOwnership()
            EngineOwnershipTests.onAnotherThread { pair.engine.retryCommitIfDue() }
        }
    }

    /// A journal write from another thread, whatever the path to it (here a program's open
    /// noted for the cache budget), stops the process: the check is where records are written.
    @Test func aRecordWrittenOffTheOwningThreadStops() async {
        await #expect(processExitsWith: .failure) {
            let pair = Pair { $0.cacheLimit = 1 << 30 }
            try? pair.local.write(rp("a"), Array("one".utf8))
            pair.engine.start()
            pair.engine.claimOwnership()
            pair.clock.advance(by: .seconds(5))
            EngineOwnershipTests.onAnotherThread { pair.engine.updateRecord(rp("a")) { $0.lastOpened = .origin } }
        }
    }
}
#endif
