import Glibc
import NimbusTestSupport
import NimbusVocabulary
import Testing

/// `CivilTime`, the one calendar: checked against glibc's `gmtime_r` (a second, independent
/// implementation) over random times from year 0 to 9999 and over the whole range of file
/// mtimes, and by hand at the places calendars go wrong (before 1970 with a fraction, leap
/// days, century years, the first and last days of the years RFC 3339 can write).
@Suite struct CivilTimeTests {
    /// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z in seconds since 1970.
    static let yearZero: Int64 = -62_167_219_200
    static let lastSecondOf9999: Int64 = 253_402_300_799

    /// What glibc says of `seconds`, as `CivilTime` fields.
    static func gmtime(_ seconds: Int64) -> [Int64]? {
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return nil }
        return [Int64(parts.tm_year) + 1900, Int64(parts.tm_mon) + 1, Int64(parts.tm_mday),
                Int64(parts.tm_hour), Int64(parts.tm_min), Int64(parts.tm_sec)]
    }

    static func fields(_ civil: CivilTime) -> [Int64] {
        [civil.year, civil.month, civil.day, civil.hour, civil.minute, civil.second]
    }

    /// `value` in decimal, zero-padded to `width`: the test's own formatting of glibc's fields.
    static func padded(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    @Test func agreesWithGmtimeFromYearZeroTo9999() throws {
        var random = SeededRandom.forTest("CivilTimeTests.agreesWithGmtimeFromYearZeroTo9999")
        for _ in 0..<20_000 {
            let seconds = Int64.random(in: Self.yearZero...Self.lastSecondOf9999, using: &random)
            let nanosecond = Int64.random(in: 0..<1_000_000_000, using: &random)
            let civil = CivilTime(secondsSinceEpoch: seconds, nanosecond: nanosecond)
            let expected = try #require(Self.gmtime(seconds), "seed \(random.seed): gmtime_r failed for \(seconds)")
            #expect(Self.fields(civil) == expected, "seed \(random.seed): \(seconds) s")
            #expect(civil.secondsSinceEpoch == seconds && civil.nanosecond == nanosecond, "seed \(random.seed): \(seconds) s back")
            let text = "\(Self.padded(expected[0], 4))-\(Self.padded(expected[1], 2))-\(Self.padded(expected[2], 2))T"
                + "\(Self.padded(expected[3], 2)):\(Self.padded(expected[4], 2)):\(Self.padded(expected[5], 2))"
            #expect(civil.rfc3339() == text + "." + Self.padded(nanosecond, 9) + "Z", "seed \(random.seed): \(seconds) s")
            #expect(civil.rfc3339(fractionDigits: 3) == text + "." + Self.padded(nanosecond / 1_000_000, 3) + "Z")
            #expect(civil.rfc3339(fractionDigits: 0) == text + "Z")
        }
    }

    /// Every mtime a file can have (Int64 nanoseconds: 1677 … 2262), fractions before 1970
    /// included: the second is the one the instant falls in, the fraction what is past it.
    @Test func everyWallInstantIsTheSecondItFallsInAndTheFractionPastIt() throws {
        var random = SeededRandom.forTest("CivilTimeTests.everyWallInstantIsTheSecondItFallsInAndTheFractionPastIt")
        for _ in 0..<20_000 {
            // Half near 1970, where a truncating division goes wrong, half anywhere.
            let nanoseconds = random.chance(0.5) ? Int64.random(in: -3_000_000_000...3_000_000_000, using: &random)
                                                 : Int64.random(in: (Int64.min + 1_000_000_000)...Int64.max, using: &random)
            let civil = CivilTime(WallInstant(nanoseconds: nanoseconds))
            let floorSeconds = (nanoseconds - (nanoseconds % 1_000_000_000 + 1_000_000_000) % 1_000_000_000) / 1_000_000_000
            let expected = try #require(Self.gmtime(floorSeconds), "seed \(random.seed): gmtime_r failed for \(floorSeconds)")
            #expect(Self.fields(civil) == expected, "seed \(random.seed): \(nanoseconds) ns")
            #expect(civil.nanosecond == nanoseconds - floorSeconds * 1_000_000_000, "seed \(random.seed): \(nanoseconds) ns")
            #expect(civil.instant == WallInstant(nanoseconds: nanoseconds), "seed \(random.seed): \(nanoseconds) ns back")
        }
    }

    @Test func daysAndDatesAreInversesAcrossTheEras() {
        var random = SeededRandom.forTest("CivilTimeTests.daysAndDatesAreInversesAcrossTheEras")
        for _ in 0..<20_000 {
            let days = Int64.random(in: -10_000_000...10_000_000, using: &random)  // about ±27 000 years
            let (year, month, day) = CivilTime.date(daysSinceEpoch: days)
            #expect((1...12).contains(month) && (1...31).contains(day), "seed \(random.seed): day \(days)")
            #expect(CivilTime.daysSinceEpoch(year: year, month: month, day: day) == days, "seed \(random.seed): day \(days)")
        }
    }

    @Test func theHardCasesByHand() {
        func text(_ nanoseconds: Int64) -> String { CivilTime(WallInstant(nanoseconds: nanoseconds)).rfc3339() }
        #expect(text(-1_500_000_000) == "1969-12-31T23:59:58.500000000Z", "−1.5 s is half a second into 23:59:58")
        #expect(text(-500_000_000) == "1969-12-31T23:59:59.500000000Z")
        #expect(text(-1) == "1969-12-31T23:59:59.999999999Z")
        #expect(text(0) == "1970-01-01T00:00:00.000000000Z")
        #expect(text(951_782_400_000_000_000) == "2000-02-29T00:00:00.000000000Z", "2000 is a leap year")
        #expect(text(-2_203_891_200_000_000_000) == "1900-03-01T00:00:00.000000000Z", "1900 is not")
        #expect(text(-2_203_891_200_000_000_001) == "1900-02-28T23:59:59.999999999Z")
        #expect(text(4_107_542_400_000_000_000) == "2100-03-01T00:00:00.000000000Z", "nor is 2100")
        #expect(CivilTime(secondsSinceEpoch: Self.yearZero).rfc3339(fractionDigits: 0) == "0000-01-01T00:00:00Z")
        #expect(CivilTime(secondsSinceEpoch: Self.yearZero - 1).dateText == "-0001-12-31")
        #expect(CivilTime(secondsSinceEpoch: Self.lastSecondOf9999, nanosecond: 999_999_999).rfc3339(fractionDigits: 3)
                == "9999-12-31T23:59:59.999Z")
        #expect(CivilTime(secondsSinceEpoch: Self.lastSecondOf9999 + 1).dateText == "10000-01-01")
        #expect(CivilTime(secondsSinceEpoch: 1_700_000_000).clockText(separator: "") == "221320")
        #expect(CivilTime(year: 2024, month: 2, day: 29, hour: 12).instant == WallInstant(nanoseconds: 1_709_208_000_000_000_000))
        #expect(CivilTime.daysSinceEpoch(year: 2023, month: 2, day: 29) == CivilTime.daysSinceEpoch(year: 2023, month: 3, day: 1),
                "a day past the month's end runs on, as mktime does")
        #expect(CivilTime(year: 9999, month: 1, day: 1).instant == .distantFuture, "past 2262 saturates")
    }
}
