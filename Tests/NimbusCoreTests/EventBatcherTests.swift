import NimbusVocabulary
import Testing
import NimbusSystem
@testable import NimbusCore

@Suite struct EventBatcherTests {
    let a = try! RelativePath(validating: "a"), b = try! RelativePath(validating: "b")

    @Test func settledPathsAreReadyAtOnce() {
        var batcher = EventBatcher(quietPeriod: 100)
        batcher.add(.settled(a), now: 0)
        #expect(batcher.nextDeadline == 0)
        #expect(batcher.take(now: 0) == .paths([a]))
        #expect(batcher.take(now: 0) == nil)
        #expect(batcher.isIdle)
    }

    @Test func aFileBeingWrittenWaitsForQuietOrClose() {
        var batcher = EventBatcher(quietPeriod: 100)
        batcher.add(.writing(a), now: 0)
        batcher.add(.writing(b), now: 0)
        #expect(batcher.take(now: 50) == nil)
        batcher.add(.writing(a), now: 60)        // still being written: the wait restarts
        #expect(batcher.nextDeadline == 100)
        #expect(batcher.take(now: 100) == .paths([b]))
        #expect(batcher.take(now: 159) == nil)
        #expect(batcher.take(now: 160) == .paths([a]))
    }

    @Test func writingAgainAfterACloseWaitsForTheNextClose() {
        var batcher = EventBatcher(quietPeriod: 100)
        batcher.add(.settled(a), now: 0)          // closed
        batcher.add(.writing(a), now: 1)          // opened and written again before we looked
        #expect(batcher.take(now: 2) == nil)
        batcher.add(.settled(a), now: 3)
        #expect(batcher.take(now: 3) == .paths([a]))
    }

    @Test func closingAFileEndsTheWait() {
        var batcher = EventBatcher(quietPeriod: 100)
        batcher.add(.writing(a), now: 0)
        batcher.add(.settled(a), now: 1)
        #expect(batcher.take(now: 1) == .paths([a]))
        #expect(batcher.nextDeadline == nil)
    }

    @Test func deletionsWaitForEachOtherSoAWholeRmIsOneBatch() {
        var batcher = EventBatcher(quietPeriod: 100, deletionQuiet: 10)
        batcher.add(.deleted(a), now: 0)
        batcher.add(.deleted(b), now: 8)          // still deleting: both wait
        #expect(batcher.take(now: 12) == nil)
        #expect(batcher.nextDeadline == 18)
        #expect(batcher.take(now: 18) == .paths([a, b]))
        #expect(batcher.isIdle)
    }

    @Test func aLargeRmWaitsLongerForItsStragglers() {
        var batcher = EventBatcher(quietPeriod: 100, deletionQuiet: 10)
        let paths = (0..<12).map { try! RelativePath(validating: "f\($0)") }
        for path in paths { batcher.add(.deleted(path), now: 0) }
        // A pause a little longer than the usual quiet does not split the batch.
        #expect(batcher.take(now: 20) == nil)
        batcher.add(.deleted(a), now: 30)
        #expect(batcher.take(now: 279) == nil)
        #expect(batcher.take(now: 280) == .paths(Set(paths + [a])))
    }

    /// The daemon's numbers: 200 ms quiet for a few deletions.
    static let ms: Int64 = 1_000_000

    @Test func aFewDeletionsAreAsQuickAsEver() {
        var batcher = EventBatcher()
        let paths = (0..<3).map { try! RelativePath(validating: "f\($0)") }
        for path in paths { batcher.add(.deleted(path), now: 0) }
        #expect(batcher.nextDeadline == 200 * Self.ms)
        #expect(batcher.take(now: 200 * Self.ms) == .paths(Set(paths)))
    }

    @Test func anRmStalledForThreeSecondsOnABusyMachineIsStillOneBatch() {
        // 419 of 1 000 files deleted, then the deleting process gets no CPU for 3 s: its first
        // part alone is under the guard's 50 %, so it must not go out as a batch of its own.
        var batcher = EventBatcher()
        let first = (0..<419).map { try! RelativePath(validating: "f\($0)") }
        for (i, path) in first.enumerated() { batcher.add(.deleted(path), now: Int64(i) * Self.ms) }
        #expect(batcher.take(now: 3_418 * Self.ms) == nil)
        let rest = (419..<800).map { try! RelativePath(validating: "f\($0)") }
        for (i, path) in rest.enumerated() { batcher.add(.deleted(path), now: 3_418 * Self.ms + Int64(i) * Self.ms) }
        let last = 3_418 * Self.ms + 380 * Self.ms
        #expect(batcher.take(now: last + 4_999 * Self.ms) == nil)
        #expect(batcher.take(now: last + 5_000 * Self.ms) == .paths(Set(first + rest)))
    }

    @Test func aFirstPartUnderTheGuardsMinimumIsNotSplitOffEither() {
        // 80 deletions (the guard never holds 100 or fewer on their own), then a 3 s stall.
        var batcher = EventBatcher()
        let first = (0..<80).map { try! RelativePath(validating: "f\($0)") }
        for path in first { batcher.add(.deleted(path), now: 0) }
        #expect(batcher.take(now: 3_000 * Self.ms) == nil)
        batcher.add(.deleted(a), now: 3_000 * Self.ms)
        #expect(batcher.take(now: 7_999 * Self.ms) == nil)
        #expect(batcher.take(now: 8_000 * Self.ms) == .paths(Set(first + [a])))
    }

    @Test func aLongRmWaitsAsLongAsItHasBeenRunningUpToALimit() {
        var batcher = EventBatcher()
        let paths = (0..<200).map { try! RelativePath(validating: "f\($0)") }
        // One deletion every 50 ms for 10 s: a pause of 9 s is not its end yet, 10 s is.
        for (i, path) in paths.enumerated() { batcher.add(.deleted(path), now: Int64(i) * 50 * Self.ms) }
        let last = 199 * 50 * Self.ms
        #expect(batcher.nextDeadline == last + last)
        #expect(batcher.take(now: last + 9_000 * Self.ms) == nil)
        #expect(batcher.take(now: last + last) == .paths(Set(paths)))

        // Deleting for minutes still ends after 30 s of quiet.
        let slow = (0..<120).map { try! RelativePath(validating: "s\($0)") }
        for (i, path) in slow.enumerated() { batcher.add(.deleted(path), now: Int64(i) * 1_000 * Self.ms) }
        #expect(batcher.nextDeadline == 119_000 * Self.ms + 30_000 * Self.ms)
        #expect(batcher.isIdle == false)
    }

    @Test func otherChangesToAPathBeingDeletedWaitWithTheDeletions() {
        // Earlier writes (the daemon's own copies, seen by the watcher) come due while an rm is
        // under way: syncing them would hand the engine the first deletions on their own.
        var batcher = EventBatcher(quietPeriod: 100, deletionQuiet: 10)
        let files = (0..<12).map { try! RelativePath(validating: "d/f\($0)") }
        let folder = try! RelativePath(validating: "d")
        batcher.add(.writing(files[0]), now: 0)
        batcher.add(.settled(folder), now: 50)
        for path in files { batcher.add(.deleted(path), now: 50) }
        batcher.add(.settled(b), now: 60)
        #expect(batcher.take(now: 100) == .paths([b]))
        #expect(batcher.take(now: 299) == nil)
        #expect(batcher.take(now: 300) == .paths(Set(files + [folder])))
        #expect(batcher.isIdle)
    }

    @Test func lostEventsAndFloodsBecomeAFullRescan() {
        var batcher = EventBatcher(quietPeriod: 100, maximumPending: 2)
        batcher.add(.rescanAll, now: 0)
        #expect(batcher.take(now: 0) == .everything)
        for name in ["x", "y", "z"] { batcher.add(.settled(try! RelativePath(validating: name)), now: 0) }
        #expect(batcher.take(now: 0) == .everything)
        #expect(batcher.isIdle)
    }
}
