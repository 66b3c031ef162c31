import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
import NimbusVocabulary
@testable import NimbusDaemon

/// A version's name starts with the UTC time it was displaced, to the nanosecond. Names
/// written before 2026-11-26 had the nanoseconds unpadded (`.9` for 9 ns, `.10` for 10 ns),
/// so within one second they did not sort by time; they are still read, listed, restored
/// and thinned in the order of their times, beside the new padded names.
@Suite struct VersionNameTests {
    static let file = rp("a.txt")

    @Test func namesWithinOneSecondSortByTime() {
        let store = VersionStore(device: "laptop")
        let second = WallInstant.origin + .seconds(1_700_000_000)
        let times = [9, 10, 99, 100_000_000, 500_000_000, 999_999_999].map { second + .nanoseconds($0) }
        let names = times.map { displayString(store.location(for: Self.file, at: $0).name) }
        #expect(names == names.sorted(), "names in the order of their times must sort alike: \(names)")
        #expect(names.map { VersionStore.displacedTime(of: Array($0.utf8)) } == times, "the name gives back the time to the nanosecond")
    }

    /// A pair whose versions store holds, for `a.txt`, two old-style names and two new ones,
    /// all within one second (ids in the order of their times, oldest first).
    static func pairWithMixedNames() throws -> (Pair, ids: [String]) {
        let pair = Pair { $0.versionsMaxSize = 20 }
        pair.engine.start()
        let stamp = ConflictNamer(device: "laptop", wallTime: pair.clock.wallNow).timestamp.replacingSpaces()
        // 9 ns and 10 ns (old names), then 11 ns and 0.5 s (new names).
        let ids = ["\(stamp).9-laptop", "\(stamp).10-laptop", "\(stamp).000000011-laptop", "\(stamp).500000000-laptop"]
        for (number, id) in ids.enumerated() {
            let location = RootMarkers.versions.appending(Self.file).appending(rp(id + VersionStore.suffix))
            try pair.cloud.write(location, Array("version \(number)".utf8))
        }
        return (pair, ids)
    }

    @Test func oldAndNewNamesAreListedNewestFirst() throws {
        let (pair, ids) = try Self.pairWithMixedNames()
        #expect(try pair.engine.versions(of: Self.file).map(\.id) == ids.reversed())
        #expect(try pair.engine.allVersions(under: .root).map(\.version.id) == ids.reversed())
    }

    @Test func restoreTakesTheNewestAndTheOneOfATime() throws {
        let (pair, ids) = try Self.pairWithMixedNames()
        let newest = try pair.engine.restorePlan(Self.file, versionID: nil, at: nil, to: nil)
        #expect(newest.map(\.version.id) == [ids[3]], "without a time, the newest version is restored")
        let second = WallInstant(nanoseconds: pair.clock.wallNow.secondsSinceEpoch * 1_000_000_000)
        let then = try pair.engine.restorePlan(Self.file, versionID: nil, at: second + .nanoseconds(10), to: nil)
        #expect(then.map(\.version.id) == [ids[2]], "at 10 ns past the second, the file held what was displaced at 11 ns")
        let older = try pair.engine.restorePlan(Self.file, versionID: nil, at: second + .nanoseconds(9), to: nil)
        #expect(older.map(\.version.id) == [ids[1]], "at 9 ns past the second, it held what was displaced at 10 ns (an old name)")
        try pair.engine.restore(then)
        pair.sync()
        #expect(pair.content(pair.local, "a.txt") == "version 2")
    }

    @Test func theSizeLimitRemovesTheOldestByTimeNotByName() throws {
        let (pair, ids) = try Self.pairWithMixedNames()
        pair.engine.pruneVersions()
        #expect(try pair.engine.versions(of: Self.file).map(\.id) == [ids[3], ids[2]],
                "two versions of 9 bytes fit in 20: the two newest stay")
    }
}
