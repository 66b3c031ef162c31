import Foundation
import Synchronization
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
import NimbusTestSupport
import NimbusVocabulary
@testable import NimbusDaemon

/// The runtime without a process (issue 15): events in through a fake watcher, time from a
/// manual clock, files in memory. Each test drives it on its own thread, which is the engine
/// thread from `begin` on.
@Suite struct PairRuntimeTests {
    @Test func aWatchedChangeIsSyncedOnceItSettles() throws {
        let pair = MemoryRuntime()
        pair.runtime.begin()
        defer { pair.runtime.finish() }
        try pair.local.write(rp("notes.txt"), "hello")
        pair.watcher(.local)?.push([WatchEvent(.created, rp("notes.txt"), isDirectory: false)])
        try pair.stepUntil("notes.txt reaches the cloud") { pair.content(pair.cloud, "notes.txt") == "hello" }
        #expect(pair.runtime.statusLine().hasPrefix("Synced "))
    }

    /// The journal could not be written after a pass (a full disk): the records it held are
    /// written once it can be, by a retry, with no further change to any file. Before, they
    /// waited for the next pass that changed something, or the stop.
    @Test func aFailedCommitIsTriedAgainWithoutAnotherChange() throws {
        let pair = MemoryRuntime()
        try pair.local.write(rp("notes.txt"), "hello")
        pair.store.failure = .noSpace
        pair.runtime.begin()
        defer { pair.runtime.finish() }
        #expect(pair.content(pair.cloud, "notes.txt") == "hello")
        #expect(pair.store.committed.isEmpty, "nothing is committed while the journal cannot be written")
        pair.store.failure = nil
        try pair.stepUntil("the held records are committed") { pair.store.committed[rp("notes.txt")] != nil }
        #expect(pair.runtime.engine.nextRetry == nil, "nothing is left to retry")
    }

    /// A folder that could not be watched at the start (inotify instances all taken by other
    /// programs: EMFILE) is tried again within seconds, not only polled every `pollInterval`,
    /// and is rescanned once watched: what changed there meanwhile arrives long before the
    /// poll would bring it. (Two daemons sharing a cloud folder under a loaded `swift test`
    /// waited for that poll, 30 s, when the instances ran out.)
    @Test func aFolderThatCouldNotBeWatchedIsWatchedAgainSoonAndRescanned() throws {
        let pair = MemoryRuntime(refusingWatches: [.cloud: 2])
        let runtime = pair.runtime
        runtime.begin()
        defer { runtime.finish() }
        let started = pair.clock.monotonicNow
        #expect(pair.watcher(.cloud) == nil && pair.watcher(.local) != nil)
        #expect(runtime.batcher.polledSides == [.cloud])

        // Written by another device while nobody watches the cloud: no event comes.
        try pair.cloud.write(rp("from-elsewhere.txt"), "news")
        try pair.stepUntil("the change made in the unwatched cloud folder arrives") {
            pair.content(pair.local, "from-elsewhere.txt") == "news"
        }
        #expect(pair.clock.monotonicNow < started + runtime.options.pollInterval,
                "the change arrived only with the poll, \(runtime.options.pollInterval) after the start")
        #expect(pair.watcher(.cloud) != nil, "the cloud folder is watched again")
        #expect(runtime.batcher.polledSides.isEmpty && runtime.batcher.nextPoll == nil && runtime.watchRetry == nil,
                "nothing is polled or retried once both folders are watched")
    }

    /// A pair halted at the start (its cloud folder lost its marker: not the folder it was
    /// paired with) still tries to watch its local folder, which is there: before, it tried
    /// only after a sync, which a halted pair never does.
    @Test func aHaltedPairStillTriesToWatchItsFolders() throws {
        let pair = MemoryRuntime()
        try pair.local.write(rp("a"), "keep")
        pair.runtime.begin()
        pair.runtime.finish()
        try pair.cloud.removeRecursively(.root)
        try pair.cloud.makeDirectories(.root)
        pair.refuseWatching(.local, times: 2)
        pair.restart()
        let runtime = pair.runtime
        runtime.begin()
        defer { runtime.finish() }
        #expect(runtime.isHalted && pair.watcher(.local) == nil)
        try pair.stepUntil("the local folder is watched again") { pair.watcher(.local) != nil }
        #expect(runtime.isHalted, "still halted: watching is not syncing")
        #expect(pair.content(pair.local, "a") == "keep")
    }

    @Test func whilePausedNothingIsCopiedAndResumingCatchesUp() throws {
        let pair = MemoryRuntime()
        let runtime = pair.runtime
        runtime.begin()
        defer { runtime.finish() }
        runtime.setPaused(true)
        #expect(runtime.step())
        #expect(runtime.engine.isPaused && runtime.isPaused, "the engine holds the one record of it")
        #expect(runtime.engine.status.phase == .paused)
        #expect(runtime.statusLine().hasPrefix("Paused"))

        try pair.local.write(rp("a"), "one")
        pair.watcher(.local)?.push([WatchEvent(.created, rp("a"), isDirectory: false)])
        // The event is taken in (the batcher waits on it), and the clock passes its quiet period.
        try pair.stepUntil("the event is taken in") { runtime.batcher.batcher.nextDeadline != nil }
        pair.clock.advance(by: runtime.options.quietPeriod * 2)
        #expect(runtime.step())
        #expect(pair.content(pair.cloud, "a") == nil, "nothing is copied while paused")
        let refused = Mutex<Result<EntryInfo?, any Error>?>(nil)
        runtime.download(rp("a"), .explicit) { result in refused.withLock { $0 = result } }
        #expect(runtime.step())
        #expect(throws: EngineRequestError.self) { try refused.withLock { $0 }?.get() }

        runtime.setPaused(false)
        try pair.stepUntil("a reaches the cloud after resuming") { pair.content(pair.cloud, "a") == "one" }
        #expect(!runtime.engine.isPaused && runtime.engine.status.phase == .idle)
    }

    /// A reload applies the settings it reports as changed: the new quiet period, rate limit
    /// and cache budget at once, and a shorter rescan interval from the reload on, not after
    /// the old interval has run out.
    @Test func aReloadAppliesTheLiveSettingsAtOnce() throws {
        let pair = MemoryRuntime()
        let runtime = pair.runtime
        runtime.begin()
        defer { runtime.finish() }
        #expect(runtime.step())
        var options = runtime.options
        options.engine.rescanInterval = .minutes(5)
        options.engine.quietPeriod = .seconds(7)
        options.engine.openRateLimit = 3
        options.engine.cacheLimit = 1 << 20
        runtime.reload(options)
        #expect(runtime.step())
        let now = pair.clock.monotonicNow
        #expect(runtime.batcher.nextRescan <= now + .minutes(5), "the next full rescan is within the new interval")
        #expect(runtime.batcher.batcher.quietPeriod == .seconds(7) && runtime.openLimiter.limit == 3)
        #expect(runtime.engine.settings.cacheLimit == 1 << 20 && runtime.engine.settings.rescanInterval == .minutes(5))
    }

    @Test func stoppingMidPassLeavesAConsistentPairThatTheNextStartFinishes() throws {
        let pair = MemoryRuntime()
        let count = 200
        pair.runtime.begin()
        for i in 0..<count { try pair.local.write(rp("d/f\(i)"), "content \(i)") }
        // SIGTERM arrives a quarter of the way through the pass.
        let beats = Mutex(0)
        let runtime = pair.runtime
        runtime.engine.onHeartbeat {
            if beats.withLock({ $0 += 1; return $0 }) == count / 4 { runtime.stop() }
        }
        runtime.requestRescan()
        try pair.stepUntil("the pass has begun and stopped") { runtime.engine.isStopping && !runtime.step() }
        runtime.finish()
        let copied = (0..<count).filter { pair.content(pair.cloud, "d/f\($0)") != nil }.count
        #expect(copied > 0 && copied < count / 2, "the pass stops between files, about a quarter of the way (\(copied) copied)")
        for (path, record) in pair.store.committed where record.base.kind == .file {
            #expect(pair.content(pair.cloud, path.description) == pair.content(pair.local, path.description), "\(path)")
        }

        pair.restart()
        pair.runtime.begin()
        pair.runtime.finish()
        for i in 0..<count {
            #expect(pair.content(pair.local, "d/f\(i)") == "content \(i)")
            #expect(pair.content(pair.cloud, "d/f\(i)") == "content \(i)")
        }
    }

    /// What READY=1 does not wait for (issue 15): the versions store is pruned, and the first
    /// sync's memory handed back, at the loop's first turn after `begin`, not inside it (where
    /// reading /proc/self/smaps and `malloc_trim` delayed READY=1 by 2.5 ms).
    @Test func theStartPrunesVersionsAndHandsBackMemoryAfterBeginNotInIt() throws {
        let pair = MemoryRuntime()
        let runtime = pair.runtime
        let expired = VersionStore(device: "laptop").location(for: rp("a"), at: pair.clock.wallNow - .hours(24 * 60))
        try pair.cloud.write(expired, "displaced 60 days ago")
        try pair.local.write(rp("a"), "one")
        runtime.begin()
        defer { runtime.finish() }
        #expect(pair.content(pair.cloud, "a") == "one", "the first sync is done when begin returns")
        #expect(pair.cloud.snapshot()[expired] != nil, "the versions store waits for the loop")
        #expect(!runtime.handBackMemoryIfIdle(), "nothing is handed back before the loop's first turn")
        #expect(runtime.step())
        #expect(pair.cloud.snapshot()[expired] == nil, "an expired version goes at the first turn")
        #expect(runtime.engine.status.versionsCount == 0)
        #expect(runtime.handBackMemoryIfIdle(), "the first sync's memory is handed back once the pair is idle")
    }

    /// After a small pass, memory is handed back (heap trimmed, code unmapped) only once the
    /// pair has stayed idle for `settledTrimDelay`, and not again before there is new work.
    @Test func memoryIsHandedBackAfterASmallPassOnceThePairHasSettled() throws {
        let pair = MemoryRuntime()
        let runtime = pair.runtime
        runtime.begin()
        defer { runtime.finish() }
        #expect(runtime.step())
        #expect(runtime.handBackMemoryIfIdle(), "the first sync's memory, at the first idle turn")
        #expect(!runtime.handBackMemoryIfIdle() && runtime.settledTrim == nil, "no work since the first sync")
        try pair.local.write(rp("a"), "one")
        pair.watcher(.local)?.push([WatchEvent(.created, rp("a"), isDirectory: false)])
        try pair.stepUntil("a reaches the cloud") { pair.content(pair.cloud, "a") == "one" }
        #expect(!runtime.handBackMemoryIfIdle(), "one file is not worth a hand-back at once")
        let due = try #require(runtime.settledTrim)
        #expect(runtime.nextWakeUp().map { $0 <= due } == true, "the loop must wake up for it")
        pair.clock.advance(by: MemoryRuntime.Runtime.settledTrimDelay)
        #expect(runtime.handBackMemoryIfIdle())
        #expect(!runtime.handBackMemoryIfIdle() && runtime.settledTrim == nil, "nothing happened since")
    }

    /// A file deleted in the cloud is kept locally for the mass-delete guard's window; the loop
    /// wakes up when the window has passed and lets it go, with no pass needed.
    @Test func aKeptDeletedFileGoesWhenTheWindowHasPassed() throws {
        let pair = MemoryRuntime()
        let runtime = pair.runtime
        runtime.begin()
        defer { runtime.finish() }
        try pair.local.write(rp("a"), "one")
        pair.watcher(.local)?.push([WatchEvent(.created, rp("a"), isDirectory: false)])
        try pair.stepUntil("a reaches the cloud") { pair.content(pair.cloud, "a") == "one" }
        try pair.cloud.removeFile(rp("a"))
        pair.watcher(.cloud)?.push([WatchEvent(.deleted, rp("a"), isDirectory: false)])
        try pair.stepUntil("a is deleted locally") { pair.content(pair.local, "a") == nil }
        let holding = RootMarkers.deletedHolding
        #expect(pair.content(pair.local, holding.description + "/a") == "one")
        let due = try #require(runtime.engine.nextKeptRelease)
        #expect(runtime.nextWakeUp().map { $0 <= due } == true, "the loop must wake up for it")
        pair.clock.advance(by: due - pair.clock.monotonicNow)
        #expect(runtime.step())
        #expect(pair.local.snapshot()[holding] == nil, "the kept file and the holding folder go")
        #expect(runtime.engine.nextKeptRelease == nil)
    }

    /// The race of `SyncEngine.holdUnreportedDeletions` through the runtime: the look that an
    /// event of our own upload brings comes after a program renamed the file, before the
    /// rename's events. The clock does not move between the two, so only those events can end
    /// the wait: the file is renamed in the cloud, not deleted and copied.
    @Test func aRenameRacingTheLookOurOwnWriteBroughtIsStillARename() throws {
        let pair = MemoryRuntime()
        let runtime = pair.runtime
        try pair.local.write(rp("big"), "a hundred megabytes")
        runtime.begin()
        defer { runtime.finish() }
        let cloudInode = try #require(try pair.cloud.metadata(of: rp("big"))?.inode)
        try pair.local.rename(rp("big"), to: rp("renamed"), replacing: false)
        try #require(pair.watcher(.cloud)).push([WatchEvent(.closedWrite, rp("big"), isDirectory: false)])
        try Polling.wait("the look at big") {
            _ = runtime.step()
            return runtime.engine.tables.deletionsAwaitingEvents == [rp("big")]
        }
        #expect(pair.content(pair.cloud, "big") != nil, "nothing reported big gone: its deletion waits")
        try #require(pair.watcher(.local)).push([WatchEvent(.movedFrom(cookie: 7), rp("big"), isDirectory: false),
                                                 WatchEvent(.movedTo(cookie: 7), rp("renamed"), isDirectory: false)])
        try Polling.wait("renamed reaches the cloud") {
            _ = runtime.step()
            return pair.content(pair.cloud, "renamed") != nil
        }
        #expect(try pair.cloud.metadata(of: rp("renamed"))?.inode == cloudInode, "renamed, not copied")
        #expect(pair.content(pair.cloud, "big") == nil)
    }

    /// A deletion the watcher reported is not held: it goes with the batch that reports it.
    @Test func aReportedDeletionGoesAtOnce() throws {
        let pair = MemoryRuntime()
        let runtime = pair.runtime
        try pair.local.write(rp("a"), "one")
        runtime.begin()
        defer { runtime.finish() }
        try pair.local.removeFile(rp("a"))
        try #require(pair.watcher(.local)).push([WatchEvent(.deleted, rp("a"), isDirectory: false)])
        try Polling.wait("the deletion is taken in") {
            _ = runtime.step()
            return runtime.batcher.reportedGone == [rp("a")]
        }
        // One pass, once the deletions' quiet has passed: a held deletion would wait longer.
        pair.clock.advance(by: runtime.batcher.batcher.deletionQuiet)
        #expect(runtime.step())
        #expect(pair.content(pair.cloud, "a") == nil, "deleted by the pass of the batch that reported it")
        #expect(runtime.engine.tables.deletionsAwaitingEvents.isEmpty && runtime.batcher.reportedGone.isEmpty)
    }

    /// A folder moved in whole (from outside the folder, or an upload's staging folder
    /// published): the watcher reports what it finds in it as created, but the folder's own
    /// hint brings all of it into one pass, with no look and no later pass per file (issue 15:
    /// a published upload of 1 000 files cost four lookups per file afterwards).
    @Test func aFolderMovedInIsOnePassNotOnePerFile() throws {
        let pair = MemoryRuntime()
        let runtime = pair.runtime
        runtime.begin()
        defer { runtime.finish() }
        try pair.local.makeDirectory(rp("photos"), mode: 0o755)
        try pair.local.write(rp("photos/a"), "one")
        try pair.local.write(rp("photos/b"), "two")
        try #require(pair.watcher(.local)).push([WatchEvent(.movedTo(cookie: 9), rp("photos"), isDirectory: true),
                                                 WatchEvent(.created, rp("photos/a"), isDirectory: false),
                                                 WatchEvent(.created, rp("photos/b"), isDirectory: false)])
        try Polling.wait("photos reaches the cloud") {
            _ = runtime.step()
            return pair.content(pair.cloud, "photos/a") == "one" && pair.content(pair.cloud, "photos/b") == "two"
        }
        #expect(runtime.batcher.batcher.isIdle, "no file of it waits for a pass of its own")
    }
}
