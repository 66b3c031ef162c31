import NimbusVocabulary
import Testing
import NimbusSystem
@testable import NimbusCore

private func rp(_ s: String) -> RelativePath { try! RelativePath(validating: s) }
private func meta(_ inode: UInt64, size: Int64 = 10) -> FileMetadata {
    FileMetadata(kind: .file, size: size, mtime: 1_000, mode: 0o644, inode: inode, device: 1)
}

/// Residency and the mass-delete guard as pure decisions (DESIGN §3, §5).
@Suite struct ResidencyTests {
    let base = BaseEntry(local: meta(1), cloud: meta(2))

    func plan(_ path: String = "a", style: PlaceholderStyle = .suffix, here: FileMetadata? = meta(1), pinned: Bool = false,
              open: Bool = false, taken: Set<String> = []) -> Result<Action, EvictionRefusal> {
        planEviction(rp(path), style: style, base: base, here: here, there: meta(2), pinned: pinned, hasConflict: false,
                     inProgress: false, isOpen: { _ in open }, isTaken: { taken.contains($0.description) })
    }

    @Test func aFileInSyncIsEvictedByOneAction() {
        #expect(plan() == .success(.evict(rp("a"), expected: meta(1), cloud: meta(2))))
    }

    @Test func refusalsSayWhy() {
        #expect(plan(pinned: true) == .failure(.pinned))
        #expect(plan(here: meta(1, size: 11)) == .failure(.notInSync))
        #expect(plan(here: nil) == .failure(.notInSync))
        #expect(plan(open: true) == .failure(.isOpen))
        #expect(plan(String(repeating: "n", count: 250)) == .failure(.noRoomForPlaceholder))
        #expect(plan(taken: ["a.nimbus"]) == .failure(.placeholderNameTaken))
        // Real names: no name of its own, so neither a length limit nor a clash.
        #expect(plan(style: .realName, taken: ["a.nimbus"]) == .success(.evict(rp("a"), expected: meta(1), cloud: meta(2))))
        #expect(plan(String(repeating: "n", count: 250), style: .realName) != .failure(.noRoomForPlaceholder))
    }

    @Test func whatIsKeptLocallyFollowsModePinsAndEvictions() {
        #expect(keepsLocalCopy(pinned: false, evicted: false, onDemand: false, pinnedByFolder: false))
        #expect(!keepsLocalCopy(pinned: false, evicted: true, onDemand: false, pinnedByFolder: false), "evicted stays so in mirror mode")
        #expect(!keepsLocalCopy(pinned: false, evicted: false, onDemand: true, pinnedByFolder: false))
        #expect(keepsLocalCopy(pinned: false, evicted: false, onDemand: true, pinnedByFolder: true))
        #expect(keepsLocalCopy(pinned: true, evicted: false, onDemand: true, pinnedByFolder: false))
    }

    /// An emptied local folder in on-demand mode is mostly placeholders: their removals count.
    @Test func placeholderRemovalsCountTowardTheMassDeleteGuard() {
        var plan = Plan()
        plan.actions = (0..<150).map { .removePlaceholder(rp("f\($0)"), expected: meta(UInt64($0))) } + [.copy(rp("new"), to: .cloud, source: meta(999), replacing: nil)]
        let (held, sides) = deletionsToHold(plan, tracked: 200, alreadyHeld: [], recentDeletions: [:], maxPercent: 50, minimum: 100)
        #expect(held.count == 150 && sides == [.local])
        #expect(withoutHeld(plan, held).actions == [.copy(rp("new"), to: .cloud, source: meta(999), replacing: nil)])
        let few = deletionsToHold(plan, tracked: 10_000, alreadyHeld: [], recentDeletions: [:], maxPercent: 50, minimum: 100)
        #expect(few.held.isEmpty && few.newlyHeldOn.isEmpty)
        // Recent deletions count too: an rm spread over several passes is caught.
        #expect(deletionsToHold(plan, tracked: 300, alreadyHeld: [], recentDeletions: [:], maxPercent: 50, minimum: 100).held.isEmpty)
        let spread = deletionsToHold(plan, tracked: 300, alreadyHeld: [], recentDeletions: [.local: 100], maxPercent: 50, minimum: 100)
        #expect(spread.held.count == 150)
    }
}
