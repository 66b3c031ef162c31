import NimbusVocabulary
import Testing
import NimbusSystem
@testable import NimbusCore

/// `deletionsToHold`, the mass-delete guard's decision (DESIGN §3), on 1 000 synced entries
/// with the daemon's settings: more than 50 % and more than 100.
@Suite struct MassDeleteGuardTests {
    static let file = FileMetadata(kind: .file, size: 3, mtime: 1, mode: 0o644, inode: 5)

    static func plan(deleting count: Int, on side: Side, from first: Int = 0) -> Plan {
        var plan = Plan()
        plan.actions = (first..<first + count).map { .remove(try! RelativePath(validating: "f\($0)"), on: side, expected: file) }
        return plan
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var deleting: Int
        /// Entries still tracked: what earlier passes deleted is no longer in the index.
        var tracked: Int
        var recent: Int
        var held: Bool
        var testDescription: String { "\(deleting) deleted, \(recent) recently, \(tracked) tracked → \(held ? "held" : "applied")" }
    }

    @Test(arguments: [
        Case(deleting: 5, tracked: 1000, recent: 0, held: false),      // a few files
        Case(deleting: 100, tracked: 150, recent: 0, held: false),     // not more than the minimum
        Case(deleting: 101, tracked: 150, recent: 0, held: true),
        Case(deleting: 500, tracked: 1000, recent: 0, held: false),    // exactly half
        Case(deleting: 501, tracked: 1000, recent: 0, held: true),
        Case(deleting: 800, tracked: 1000, recent: 0, held: true),
        // An rm split in two: the first part (under half) went out, the rest comes while
        // the first still counts.
        Case(deleting: 419, tracked: 1000, recent: 0, held: false),
        Case(deleting: 381, tracked: 581, recent: 419, held: true),
        Case(deleting: 60, tracked: 940, recent: 60, held: false),     // two small deletes
    ])
    func aPlanIsHeldWhenItAndTheRecentDeletionsAreTooMany(_ c: Case) {
        for side in Side.allCases {
            let plan = Self.plan(deleting: c.deleting, on: side)
            let (held, newlyHeldOn) = deletionsToHold(plan, tracked: c.tracked, alreadyHeld: [], recentDeletions: [side: c.recent],
                                                      maxPercent: 50, minimum: 100)
            #expect(held.count == (c.held ? c.deleting : 0))
            #expect(newlyHeldOn == (c.held ? [side] : []))
        }
    }

    @Test func heldDeletionsStayHeldAndOnlyTheirSideIsHeld() {
        var plan = Self.plan(deleting: 3, on: .local)
        plan.actions += Self.plan(deleting: 3, on: .cloud, from: 10).actions
        let alreadyHeld: Set = [try! RelativePath(validating: "f0")]
        let (held, newlyHeldOn) = deletionsToHold(plan, tracked: 1000, alreadyHeld: alreadyHeld, recentDeletions: [:],
                                                  maxPercent: 50, minimum: 100)
        #expect(held.map(\.path) == [try! RelativePath(validating: "f0")])
        #expect(newlyHeldOn.isEmpty)
    }
}
