import NimbusVocabulary
import Testing
import NimbusSystem
@testable import NimbusCore

/// Times are counted in nanoseconds from the monotonic clock's origin, to keep the tables short.
@Suite struct EventBatcherTests {
    func at(_ nanoseconds: Int64) -> MonotonicInstant { MonotonicInstant(nanoseconds: nanoseconds) }

    let a = try! RelativePath(validating: "a"), b = try! RelativePath(validating: "b")

    @Test func settledPathsAreReadyAtOnce() {
        var batcher = EventBatcher(quietPeriod: .nanoseconds(100))
        batcher.add(.settled(a), now: at(0))
        #expect(batcher.nextDeadline == at(0))
        #expect(batcher.take(now: at(0)) == .paths([a]))
        #expect(batcher.take(now: at(0)) == nil)
        #expect(batcher.isIdle)
    }

    @Test func aFileBeingWrittenWaitsForQuietOrClose() {
        var batcher = EventBatcher(quietPeriod: .nanoseconds(100))
        batcher.add(.writing(a), now: at(0))
        batcher.add(.writing(b), now: at(0))
        #expect(batcher.take(now: at(50)) == nil)
        batcher.add(.writing(a), now: at(60))        // still being written: the wait restarts
        #expect(batcher.nextDeadline == at(100))
        #expect(batcher.take(now: at(100)) == .paths([b]))
        #expect(batcher.take(now: at(159)) == nil)
        #expect(batcher.take(now: at(160)) == .paths([a]))
    }

    @Test func writingAgainAfterACloseWaitsForTheNextClose() {
        var batcher = EventBatcher(quietPeriod: .nanoseconds(100))
        batcher.add(.settled(a), now: at(0))          // closed
        batcher.add(.writing(a), now: at(1))          // opened and written again before we looked
        #expect(batcher.take(now: at(2)) == nil)
        batcher.add(.settled(a), now: at(3))
        #expect(batcher.take(now: at(3)) == .paths([a]))
    }

    @Test func closingAFileEndsTheWait() {
        var batcher = EventBatcher(quietPeriod: .nanoseconds(100))
        batcher.add(.writing(a), now: at(0))
        batcher.add(.settled(a), now: at(1))
        #expect(batcher.take(now: at(1)) == .paths([a]))
        #expect(batcher.nextDeadline == nil)
    }

    @Test func deletionsWaitForEachOtherSoAWholeRmIsOneBatch() {
        var batcher = EventBatcher(quietPeriod: .nanoseconds(100), deletionQuiet: .nanoseconds(10))
        batcher.add(.deleted(a), now: at(0))
        batcher.add(.deleted(b), now: at(8))          // still deleting: both wait
        #expect(batcher.take(now: at(12)) == nil)
        #expect(batcher.nextDeadline == at(18))
        #expect(batcher.take(now: at(18)) == .paths([a, b]))
        #expect(batcher.isIdle)
    }

    @Test func aLargeRmWaitsLongerForItsStragglers() {
        var batcher = EventBatcher(quietPeriod: .nanoseconds(100), deletionQuiet: .nanoseconds(10))
        let paths = (0..<12).map { try! RelativePath(validating: "f\($0)") }
        for path in paths { batcher.add(.deleted(path), now: at(0)) }
        // A pause a little longer than the usual quiet does not split the batch.
        #expect(batcher.take(now: at(20)) == nil)
        batcher.add(.deleted(a), now: at(30))
        #expect(batcher.take(now: at(279)) == nil)
        #expect(batcher.take(now: at(280)) == .paths(Set(paths + [a])))
    }

    /// The daemon's numbers: 200 ms quiet for a few deletions.
    static let ms: Int64 = 1_000_000

    @Test func aFewDeletionsAreAsQuickAsEver() {
        var batcher = EventBatcher()
        let paths = (0..<3).map { try! RelativePath(validating: "f\($0)") }
        for path in paths { batcher.add(.deleted(path), now: at(0)) }
        #expect(batcher.nextDeadline == at(200 * Self.ms))
        #expect(batcher.take(now: at(200 * Self.ms)) == .paths(Set(paths)))
    }

    @Test func anRmStalledForThreeSecondsOnABusyMachineIsStillOneBatch() {
        // 419 of 1 000 files deleted, then the deleting process gets no CPU for 3 s: its first
        // part alone is under the guard's 50 %, so it must not go out as a batch of its own.
        var batcher = EventBatcher()
        let first = (0..<419).map { try! RelativePath(validating: "f\($0)") }
        for (i, path) in first.enumerated() { batcher.add(.deleted(path), now: at(Int64(i) * Self.ms)) }
        #expect(batcher.take(now: at(3_418 * Self.ms)) == nil)
        let rest = (419..<800).map { try! RelativePath(validating: "f\($0)") }
        for (i, path) in rest.enumerated() { batcher.add(.deleted(path), now: at(3_418 * Self.ms + Int64(i) * Self.ms)) }
        let last = 3_418 * Self.ms + 380 * Self.ms
        #expect(batcher.take(now: at(last + 4_999 * Self.ms)) == nil)
        #expect(batcher.take(now: at(last + 5_000 * Self.ms)) == .paths(Set(first + rest)))
    }

    @Test func aFirstPartUnderTheGuardsMinimumIsNotSplitOffEither() {
        // 80 deletions (the guard never holds 100 or fewer on their own), then a 3 s stall.
        var batcher = EventBatcher()
        let first = (0..<80).map { try! RelativePath(validating: "f\($0)") }
        for path in first { batcher.add(.deleted(path), now: at(0)) }
        #expect(batcher.take(now: at(3_000 * Self.ms)) == nil)
        batcher.add(.deleted(a), now: at(3_000 * Self.ms))
        #expect(batcher.take(now: at(7_999 * Self.ms)) == nil)
        #expect(batcher.take(now: at(8_000 * Self.ms)) == .paths(Set(first + [a])))
    }

    @Test func aLongRmWaitsAsLongAsItHasBeenRunningUpToALimit() {
        var batcher = EventBatcher()
        let paths = (0..<200).map { try! RelativePath(validating: "f\($0)") }
        // One deletion every 50 ms for 10 s: a pause of 9 s is not its end yet, 10 s is.
        for (i, path) in paths.enumerated() { batcher.add(.deleted(path), now: at(Int64(i) * 50 * Self.ms)) }
        let last = 199 * 50 * Self.ms
        #expect(batcher.nextDeadline == at(last + last))
        #expect(batcher.take(now: at(last + 9_000 * Self.ms)) == nil)
        #expect(batcher.take(now: at(last + last)) == .paths(Set(paths)))

        // Deleting for minutes still ends after 30 s of quiet.
        let slow = (0..<120).map { try! RelativePath(validating: "s\($0)") }
        for (i, path) in slow.enumerated() { batcher.add(.deleted(path), now: at(Int64(i) * 1_000 * Self.ms)) }
        #expect(batcher.nextDeadline == at(119_000 * Self.ms + 30_000 * Self.ms))
        #expect(batcher.isIdle == false)
    }

    @Test func otherChangesToAPathBeingDeletedWaitWithTheDeletions() {
        // Earlier writes (the daemon's own copies, seen by the watcher) come due while an rm is
        // under way: syncing them would hand the engine the first deletions on their own.
        var batcher = EventBatcher(quietPeriod: .nanoseconds(100), deletionQuiet: .nanoseconds(10))
        let files = (0..<12).map { try! RelativePath(validating: "d/f\($0)") }
        let folder = try! RelativePath(validating: "d")
        batcher.add(.writing(files[0]), now: at(0))
        batcher.add(.settled(folder), now: at(50))
        for path in files { batcher.add(.deleted(path), now: at(50)) }
        batcher.add(.settled(b), now: at(60))
        #expect(batcher.take(now: at(100)) == .paths([b]))
        #expect(batcher.take(now: at(299)) == nil)
        #expect(batcher.take(now: at(300)) == .paths(Set(files + [folder])))
        #expect(batcher.isIdle)
    }

    @Test func lostEventsAndFloodsBecomeAFullRescan() {
        var batcher = EventBatcher(quietPeriod: .nanoseconds(100), maximumPending: 2)
        batcher.add(.rescanAll, now: at(0))
        #expect(batcher.take(now: at(0)) == .everything)
        for name in ["x", "y", "z"] { batcher.add(.settled(try! RelativePath(validating: name)), now: at(0)) }
        #expect(batcher.take(now: at(0)) == .everything)
        #expect(batcher.isIdle)
    }
}
