import NimbusVocabulary
import Testing
@testable import NimbusCore

/// `AppliedDeletions`: which applied deletions still count toward the mass-delete guard, and
/// in which order a revert brings them back.
@Suite struct AppliedDeletionsTests {
    static func path(_ s: String) -> RelativePath { try! RelativePath(validating: s) }
    static func at(_ seconds: Int64) -> MonotonicInstant { MonotonicInstant(nanoseconds: seconds * 1_000_000_000) }
    static let window = Duration.seconds(45)

    static func deletion(_ p: String, _ side: Side, at seconds: Int64, _ kept: KeptContent? = nil) -> AppliedDeletion {
        AppliedDeletion(path: path(p), side: side, at: at(seconds), kept: kept ?? .localFile(at: path(".nimbus-tmp-deleted/" + p)))
    }

    @Test func theyExpireAfterTheWindowExceptOnASideWithDeletionsHeld() {
        var applied = AppliedDeletions()
        applied.append(Self.deletion("a", .local, at: 0))
        applied.append(Self.deletion("b", .cloud, at: 0, .cloudVersion(at: Self.path(".nimbus/versions/b"), size: 1)))
        applied.append(Self.deletion("c", .local, at: 30))
        #expect(applied.counts == [.local: 2, .cloud: 1])
        #expect(applied.expire(now: Self.at(44), window: Self.window, holding: []).isEmpty)
        #expect(applied.expire(now: Self.at(45), window: Self.window, holding: [.local]).map(\.path) == [Self.path("b")])
        #expect(applied.counts == [.local: 2, .cloud: 0], "nothing expires where deletions are held")
        #expect(applied.expire(now: Self.at(100), window: Self.window, holding: []).map(\.path) == [Self.path("a"), Self.path("c")])
        #expect(applied.entries.isEmpty)
    }

    @Test func theNextReleaseIsTheOldestKeptLocalFilesOnASideNotHeld() {
        var applied = AppliedDeletions()
        applied.append(Self.deletion("v", .cloud, at: 1, .cloudVersion(at: Self.path(".nimbus/versions/v"), size: 1)))
        applied.append(Self.deletion("d", .local, at: 2, .folder(mode: 0o755)))
        #expect(applied.nextRelease(window: Self.window, holding: []) == nil, "only local files are let go")
        applied.append(Self.deletion("f", .local, at: 3))
        applied.append(Self.deletion("g", .local, at: 5))
        #expect(applied.nextRelease(window: Self.window, holding: []) == Self.at(48))
        #expect(applied.nextRelease(window: Self.window, holding: [.local]) == nil)
        #expect(applied.restorable(on: .local) == 3 && applied.restorable(on: .cloud) == 1)
    }

    @Test func aRevertMakesFoldersFirstOutermostFirstAndTakesAPathsLatestDeletion() {
        let older = Self.deletion("d/x", .local, at: 1, .localFile(at: Self.path("h/old")))
        let newer = Self.deletion("d/x", .local, at: 9, .localFile(at: Self.path("h/new")))
        let order = AppliedDeletions.restoreOrder([
            Self.deletion("a", .local, at: 2), newer, Self.deletion("d/e", .local, at: 3, .folder(mode: 0o700)),
            older, Self.deletion("d", .local, at: 4, .folder(mode: 0o750)),
        ])
        #expect(order.map(\.path.description) == ["d", "d/e", "a", "d/x"])
        #expect(order.last?.kept == .localFile(at: Self.path("h/new")))
    }

    @Test func forgettingAKeptPlaceDropsItsDeletion() {
        var applied = AppliedDeletions()
        applied.append(Self.deletion("a", .local, at: 0))
        applied.append(Self.deletion("b", .local, at: 0))
        applied.forget(keptAt: .localFile(at: Self.path(".nimbus-tmp-deleted/a")))
        #expect(applied.entries.map(\.path) == [Self.path("b")])
        #expect(applied.take(on: [.local]).count == 1 && applied.entries.isEmpty)
    }
}
