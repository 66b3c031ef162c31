import NimbusVocabulary
import Testing

/// The arithmetic of `MonotonicInstant`, `WallInstant` and the `Duration` conversions the
/// engine relies on: intervals between instants, saturation instead of a trap, and poll
/// timeouts rounded up.
@Suite struct TimeInstantTests {
    let start = MonotonicInstant(nanoseconds: 1_000)

    @Test func anInstantPlusAnIntervalIsThatIntervalLater() {
        let later = start + .milliseconds(3)
        #expect(later > start && later.duration(since: start) == .milliseconds(3))
        #expect(start - later == .milliseconds(-3))
        #expect(later - .milliseconds(3) == start)
        var moved = start
        moved += .nanoseconds(1)
        #expect(moved.nanoseconds == 1_001 && [moved, start, later].sorted() == [start, moved, later])
    }

    @Test func arithmeticSaturatesInsteadOfTrapping() {
        let last = MonotonicInstant(nanoseconds: .max - 1)
        #expect(last + .seconds(1) == .distantFuture)
        #expect((MonotonicInstant(nanoseconds: -2) - .seconds(Int64.max)).nanoseconds == .min)
        #expect(MonotonicInstant.origin - .seconds(Int64.min) == .distantFuture)
        // The interval between the extremes does not fit in Int64 nanoseconds, but in Duration.
        #expect(MonotonicInstant.distantFuture - MonotonicInstant(nanoseconds: .min) > .seconds(500 * 365 * 86_400))
    }

    @Test func nanosecondCountTruncatesTowardZeroAndSaturates() {
        #expect(Duration.seconds(2).nanosecondCount == 2_000_000_000)
        #expect(Duration.nanoseconds(-1).nanosecondCount == -1)
        #expect((Duration.nanoseconds(3) / 2).nanosecondCount == 1)
        #expect(Duration.seconds(Int64.max).nanosecondCount == .max)
        #expect(Duration.seconds(Int64.min).nanosecondCount == .min)
        #expect(Duration.days(30) == .seconds(2_592_000) && Duration.hours(2) == .minutes(120))
    }

    @Test func pollTimeoutsRoundUpSoANearDeadlineDoesNotSpin() {
        #expect(Duration.microseconds(500).pollMilliseconds(atMost: 1000) == 1)
        #expect(Duration.nanoseconds(1).pollMilliseconds(atMost: 1000) == 1)
        #expect(Duration.milliseconds(1).pollMilliseconds(atMost: 1000) == 1)
        #expect((Duration.milliseconds(1) + .nanoseconds(1)).pollMilliseconds(atMost: 1000) == 2)
        #expect(Duration.zero.pollMilliseconds(atMost: 1000) == 0)
        #expect(Duration.seconds(-5).pollMilliseconds(atMost: 1000) == 0, "a deadline already passed does not wait")
        #expect(Duration.seconds(5).pollMilliseconds(atMost: 1000) == 1000)
        #expect(Duration.days(365).pollMilliseconds() == .max)
    }

    @Test func wallSecondsRoundDownAlsoBeforeTheEpoch() {
        let justBefore = WallInstant(nanoseconds: -1)
        #expect(justBefore.secondsSinceEpoch == -1 && justBefore.nanosecondsIntoSecond == 999_999_999)
        let later = WallInstant(mtime: 1_700_000_000_123_456_789)
        #expect(later.secondsSinceEpoch == 1_700_000_000 && later.nanosecondsIntoSecond == 123_456_789)
    }
}
