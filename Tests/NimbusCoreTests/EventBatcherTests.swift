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
        #expect(batcher.take(now: 129) == nil)
        #expect(batcher.take(now: 130) == .paths(Set(paths + [a])))
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
