import NimbusCore
import NimbusVocabulary
import Testing

/// The staggered schedule and the size limit of the versions store, on fixed tables.
struct VersionRetentionTests {
    static let minute: Duration = .minutes(1)
    static let hour: Duration = .hours(1)
    static let day: Duration = .days(1)
    static let now = WallInstant.origin + .days(1_000)

    /// A version of `file` displaced `age` ago, named by its age in minutes.
    func version(_ file: String, _ age: Duration, size: Int64 = 10) -> VersionRetention.Candidate {
        VersionRetention.Candidate(file: file, id: "\(file)@\(Int(age / Self.minute))m", displacedAt: Self.now - age, size: size)
    }

    func expiredIDs(_ policy: VersionRetention, _ versions: [VersionRetention.Candidate]) -> [String] {
        policy.expired(versions, now: Self.now).map(\.id)
    }

    @Test func everyVersionOfTheLastHourIsKept() {
        // 20 appends, one every 2 minutes: 19 versions, all younger than an hour.
        let versions = (1...19).map { version("log.txt", Self.minute * (Int64($0) * 2)) }
        #expect(expiredIDs(VersionRetention(), versions).isEmpty)
    }

    @Test func thenOneAnHourForADay() {
        // Every 20 minutes from 1 h to 5 h ago: one per hour survives.
        let versions = stride(from: 60, through: 300, by: 20).map { version("a", Self.minute * Int64($0)) }
        let expired = Set(expiredIDs(VersionRetention(), versions))
        let kept = versions.map(\.id).filter { !expired.contains($0) }
        #expect(kept == ["a@60m", "a@120m", "a@180m", "a@240m", "a@300m"], "\(kept)")
    }

    @Test func thenOneADayUntilTheRetention() {
        // One every 6 hours from 1 day to 40 days ago, retention 30 days.
        let versions = stride(from: 24, through: 40 * 24, by: 6).map { version("a", Self.hour * Int64($0)) }
        let expired = Set(expiredIDs(VersionRetention(), versions))
        let kept = versions.filter { !expired.contains($0.id) }
        #expect(kept.count == 30, "one a day for days 1…30: \(kept.map(\.id))")
        #expect(kept.allSatisfy { Self.now - $0.displacedAt <= Self.day * 30 })
        for (newer, older) in zip(kept, kept.dropFirst()) {
            #expect(newer.displacedAt - older.displacedAt >= Self.day, "\(newer.id) and \(older.id) are less than a day apart")
        }
    }

    @Test func filesAreScheduledEachOnTheirOwn() {
        let versions = [version("a", Self.hour * 2), version("b", Self.hour * 2 + Self.minute)]
        #expect(expiredIDs(VersionRetention(), versions).isEmpty)
    }

    @Test func theSizeLimitRemovesTheOldestFirstAcrossFiles() {
        let versions = [version("a", Self.minute, size: 40), version("b", Self.minute * 2, size: 40),
                        version("a", Self.minute * 3, size: 40), version("c", Self.minute * 4, size: 40)]
        #expect(expiredIDs(VersionRetention(maxBytes: 100), versions) == ["c@4m", "a@3m"])
        #expect(expiredIDs(VersionRetention(maxBytes: 0), versions).count == 4)
        #expect(expiredIDs(VersionRetention(maxBytes: 160), versions).isEmpty)
    }

    @Test func theRetentionBoundsEverything() {
        let versions = [version("a", Self.day * 31), version("a", Self.day * 29)]
        #expect(expiredIDs(VersionRetention(), versions) == ["a@44640m"])
        #expect(expiredIDs(VersionRetention(retention: Self.day * 7), versions).count == 2)
    }
}
