import NimbusVocabulary
import Testing
import NimbusSystem
@testable import NimbusCore
import NimbusTestSupport

fileprivate func rp(_ s: String) -> RelativePath { try! RelativePath(validating: s) }
fileprivate func id(_ n: UInt64) -> LockID { LockID(rawValue: n) }

/// "x a/b" = exclusive on a/b, "s ." = shared on the root.
fileprivate func parse(_ spec: String) -> (RelativePath, LockMode) {
    (rp(String(spec.dropFirst(2))), spec.first == "x" ? .exclusive : .shared)
}

/// Drives a table by reference, so that each step can sit inside `#expect`.
fileprivate final class Driver {
    var table = LockTable()
    func request(_ n: UInt64, _ spec: String, owner: OwnerID? = nil) -> Bool {
        let (path, mode) = parse(spec)
        return table.request(id(n), path: path, mode: mode, owner: owner)
    }
    func release(_ n: UInt64) -> [UInt64] { table.release(id(n)).map(\.rawValue) }
    func cancel(_ n: UInt64) -> [UInt64] { table.cancel(id(n)).map(\.rawValue) }
    func releaseAll(_ owner: OwnerID) -> [UInt64] { table.releaseAll(owner: owner).map(\.rawValue) }
    func state(_ n: UInt64) -> LockInfo.State? { table.info(id(n))?.state }
    var ids: [UInt64] { table.snapshot.map(\.id.rawValue) }
}

/// One lock held, one request made: granted at once or not.
struct ConflictCase: CustomTestStringConvertible, Sendable {
    let held: String
    let requested: String
    let granted: Bool
    var testDescription: String { "\(held) then \(requested): \(granted ? "granted" : "waits")" }

    init(_ held: String, _ requested: String, _ granted: Bool) {
        (self.held, self.requested, self.granted) = (held, requested, granted)
    }
}

@Suite struct LockTableTests {
    static let conflictCases: [ConflictCase] = [
        // The same path.
        .init("x a", "x a", false), .init("s a", "s a", true),
        .init("s a", "x a", false), .init("x a", "s a", false),
        // Ancestors and descendants, at any depth.
        .init("x a", "s a/b", false), .init("s a", "x a/b/c", false),
        .init("x a/b/c", "s a", false), .init("s a/b", "x a", false),
        .init("s a", "s a/b/c", true), .init("s a/b", "s a", true),
        // Siblings, and names that share a prefix without being an ancestor.
        .init("x a/b", "x a/c", true), .init("x a", "x b", true),
        .init("x a", "x ab", true), .init("x a", "x a.b", true), .init("x a.b", "x a/b", true),
        // The root is the whole tree.
        .init("x .", "s a/b", false), .init("x a/b", "s .", false), .init("x .", "x .", false),
        .init("s .", "x a", false), .init("s .", "s a", true), .init("s a", "s .", true),
    ]

    @Test(arguments: conflictCases)
    func conflicts(_ c: ConflictCase) {
        let t = Driver()
        #expect(t.request(1, c.held))
        let (path, mode) = parse(c.requested)
        #expect(t.table.isGrantable(path, mode: mode) == c.granted)
        #expect(t.request(2, c.requested) == c.granted)
        #expect(t.state(2) == (c.granted ? .granted : .waiting))
        // Releasing the holder always lets the request through.
        #expect(t.release(1) == (c.granted ? [] : [2]))
    }

    @Test func waitingWriterIsNotStarvedByReaders() {
        let t = Driver()
        #expect(t.request(1, "s a"))
        #expect(!t.request(2, "x a"))
        // Compatible with the reader holding "a", but the writer waits first.
        #expect(!t.request(3, "s a"))
        #expect(!t.request(4, "s a/x"))
        #expect(t.request(5, "s b"))
        #expect(t.release(1) == [2])
        #expect(t.release(2) == [3, 4])
    }

    @Test func releaseGrantsInArrivalOrder() {
        let t = Driver()
        #expect(t.request(1, "x a"))
        for (n, spec) in [(2, "s a"), (3, "s a/b"), (4, "x a/c"), (5, "s a"), (6, "x a/b/c")] as [(UInt64, String)] {
            #expect(!t.request(n, spec))
        }
        #expect(t.release(1) == [2, 3])  // 4 conflicts with 2; 5 and 6 wait behind 4
        #expect(t.release(2) == [4])  // a/c beside a/b: no conflict
        #expect(t.release(3) == [])  // 6 is free of 3 but waits behind 5
        #expect(t.release(4) == [5])
        #expect(t.release(5) == [6])
        #expect(t.release(6) == [])
        #expect(t.table.isEmpty)
    }

    @Test func cancelWithdrawsAWaiterAndUnblocksLaterOnes() {
        let t = Driver()
        #expect(t.request(1, "s a"))
        #expect(!t.request(2, "x a"))
        #expect(!t.request(3, "s a/b"))
        #expect(t.cancel(2) == [3])
        #expect(t.state(2) == nil)
        // A granted lock is not cancelled; unknown ids are ignored.
        #expect(t.cancel(1) == [])
        #expect(t.state(1) == .granted)
        #expect(t.cancel(99) == [] && t.release(99) == [])
    }

    @Test func cancelLeavesWaitersBlockedBySomethingElse() {
        let t = Driver()
        #expect(t.request(1, "x a"))
        #expect(!t.request(2, "x a/b"))
        #expect(!t.request(3, "s a/b/c"))
        #expect(t.cancel(2) == [])
        #expect(t.release(1) == [3])
    }

    @Test func releaseAllDropsAnOwnersLocksAndRequests() {
        let app = OwnerID(rawValue: 7), other = OwnerID(rawValue: 8)
        let t = Driver()
        #expect(t.request(1, "x a", owner: app))
        #expect(t.request(2, "s b", owner: other))
        #expect(!t.request(3, "x b", owner: app))
        #expect(!t.request(4, "s a/f", owner: other))
        #expect(!t.request(5, "s b"))  // behind 3
        #expect(t.table.requests(ownedBy: app).map(\.id) == [id(1), id(3)])
        #expect(t.releaseAll(app) == [4, 5])
        #expect(t.ids == [2, 4, 5])
        #expect(t.table.snapshot.allSatisfy { $0.state == .granted })
        #expect(t.releaseAll(app) == [])
    }

    @Test func snapshotAndHolders() {
        let t = Driver()
        let owner = OwnerID(rawValue: 3)
        #expect(t.request(1, "s a/b", owner: owner))
        #expect(t.request(2, "x c"))
        #expect(!t.request(3, "x a"))
        #expect(t.table.snapshot == [
            LockInfo(id: id(1), path: rp("a/b"), mode: .shared, owner: owner, state: .granted),
            LockInfo(id: id(2), path: rp("c"), mode: .exclusive, owner: nil, state: .granted),
            LockInfo(id: id(3), path: rp("a"), mode: .exclusive, owner: nil, state: .waiting),
        ])
        #expect(t.table.holders(of: rp("a")).map(\.id) == [id(1)])  // waiting 3 holds nothing
        #expect(t.table.holders(of: rp("a/b/x")).map(\.id) == [id(1)])
        #expect(t.table.holders(of: .root).map(\.id) == [id(1), id(2)])
        #expect(t.table.holders(of: rp("d")).isEmpty)
    }

    /// 10 000 locks: on distinct files (the daemon's copies), queued on one path, and readers
    /// queued behind one writer. The work must stay linear: counted in queue entries visited
    /// (exact, whatever the machine's load), timed only against a bound a quadratic table
    /// would blow by far.
    @Test func tenThousandLocksStayLinear() {
        let count = 10_000
        let files = (0..<count).map { rp("dir\($0 % 100)/sub/file\($0)") }
        let sameFile = rp("a/b"), folder = rp("a"), inFolder = files.map { folder.appending($0) }
        let ids = (0..<count).map { id(UInt64($0)) }, writer = id(UInt64(count))
        var table = LockTable()
        var surprises = 0
        func request(_ n: Int, _ path: RelativePath, _ mode: LockMode) -> Bool {
            table.request(ids[n], path: path, mode: mode, owner: nil)
        }
        let clock = ContinuousClock()
        let distinct = clock.measure {
            for n in 0..<count where !request(n, files[n], .exclusive) { surprises += 1 }
            for n in 0..<count where !table.release(ids[n]).isEmpty { surprises += 1 }
        }
        let distinctVisits = table.queueEntriesVisited
        let samePath = clock.measure {
            for n in 0..<count { _ = request(n, sameFile, .exclusive) }
            for n in 0..<count - 1 where table.release(ids[n]) != [ids[n + 1]] { surprises += 1 }
            _ = table.release(ids[count - 1])
        }
        let samePathVisits = table.queueEntriesVisited - distinctVisits
        let readers = clock.measure {
            _ = table.request(writer, path: folder, mode: .exclusive, owner: nil)
            for n in 0..<count { _ = request(n, inFolder[n], .shared) }
            if table.release(writer).count != count { surprises += 1 }
            for n in 0..<count where !table.release(ids[n]).isEmpty { surprises += 1 }
        }
        let readerVisits = table.queueEntriesVisited - distinctVisits - samePathVisits
        print("LockTable, 10 000 locks (request + release): distinct paths \(distinct), one path \(samePath), readers behind a writer \(readers)")
        #expect(surprises == 0 && table.isEmpty)
        #expect(distinctVisits == 0)  // nobody waits: the queue is never walked
        #expect(samePathVisits <= 2 * count)  // each release stops at the next waiter
        #expect(readerVisits == count)  // one walk grants them all
        #expect(distinct + samePath + readers < .seconds(20))
    }
}

/// The same rules written the slow, obvious way, to check the indexed table against.
fileprivate struct NaiveLockTable {
    struct Entry { let id: LockID, path: RelativePath, mode: LockMode, owner: OwnerID?; var granted: Bool }
    var entries: [Entry] = []  // arrival order

    static func conflict(_ a: Entry, _ b: Entry) -> Bool {
        (a.mode == .exclusive || b.mode == .exclusive) && (a.path.contains(b.path) || b.path.contains(a.path))
    }

    mutating func request(_ entry: Entry) -> Bool {
        var entry = entry
        entry.granted = !entries.contains { Self.conflict($0, entry) }
        entries.append(entry)
        return entry.granted
    }

    /// Drops `ids`, then grants, oldest first, every waiter that conflicts with no granted lock
    /// and no earlier waiter.
    mutating func drop(_ isDropped: (Entry) -> Bool) -> [LockID] {
        entries.removeAll(where: isDropped)
        var granted: [LockID] = []
        for i in entries.indices where !entries[i].granted {
            let blocked = entries.indices.contains { j in
                j != i && (entries[j].granted || j < i) && Self.conflict(entries[i], entries[j])
            }
            if !blocked { entries[i].granted = true; granted.append(entries[i].id) }
        }
        return granted
    }
}

extension LockTableTests {
    @Test(arguments: 1...6 as ClosedRange<UInt64>)
    func randomOperationsMatchTheNaiveRules(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let paths = [".", "a", "a/b", "a/b/c", "a/c", "b", "b/d", "ab"].map(rp)
        let owners: [OwnerID?] = [nil, OwnerID(rawValue: 1), OwnerID(rawValue: 2)]
        var table = LockTable(), model = NaiveLockTable()
        var nextID: UInt64 = 0
        for step in 0..<2000 {
            let live = model.entries.map(\.id)
            switch Int.random(in: 0..<20, using: &random) {
            case 0..<9:
                nextID += 1
                let entry = NaiveLockTable.Entry(
                    id: id(nextID), path: paths.randomElement(using: &random)!,
                    mode: Bool.random(using: &random) ? .shared : .exclusive,
                    owner: owners.randomElement(using: &random)!, granted: false)
                let granted = table.request(entry.id, path: entry.path, mode: entry.mode, owner: entry.owner)
                #expect(granted == model.request(entry), "seed \(seed) step \(step)")
            case 9..<16 where !live.isEmpty:
                let victim = live.randomElement(using: &random)!
                let granted = table.release(victim)
                #expect(granted == model.drop { $0.id == victim }, "seed \(seed) step \(step)")
            case 16..<19 where !live.isEmpty:
                let victim = live.randomElement(using: &random)!
                let expected = model.entries.first { $0.id == victim }!.granted ? [] : model.drop { $0.id == victim }
                let granted = table.cancel(victim)
                #expect(granted == expected, "seed \(seed) step \(step)")
            default:
                let owner = owners[Int.random(in: 1...2, using: &random)]!
                let granted = table.releaseAll(owner: owner)
                #expect(granted == model.drop { $0.owner == owner }, "seed \(seed) step \(step)")
            }
            let expected = model.entries.map { [$0.id.rawValue, $0.granted ? 1 : 0] }
            guard table.snapshot.map({ [$0.id.rawValue, $0.state == .granted ? 1 : 0] }) == expected else {
                Issue.record("seed \(seed) step \(step): table and model disagree")
                return
            }
        }
    }
}
