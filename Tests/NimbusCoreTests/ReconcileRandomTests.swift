import Foundation
import NimbusVocabulary
import Testing
import NimbusSystem
@testable import NimbusCore
import NimbusTestSupport

struct ScenarioGenerator {
    var random: SeededRandom
    var nextContent = 1
    var nextInode: UInt64 = 1

    static let names = ["a", "b", "c", "d.txt"]

    mutating func path(in tree: Tree) -> RelativePath? {
        let dirs = [RelativePath.root] + tree.nodes.filter { $0.value.kind == .directory }.map(\.key)
        let dir = dirs.randomElement(using: &random)!
        let name = Self.names.randomElement(using: &random)!
        let candidate = try! dir.appending(name: Array(name.utf8))
        return tree.nodes[candidate] == nil && candidate.depth <= 3 ? candidate : nil
    }

    mutating func content() -> Int {
        // Reuse old content now and then, so "both changed to the same content" happens.
        if nextContent > 3 && Int.random(in: 0..<6, using: &random) == 0 { return Int.random(in: 1..<nextContent, using: &random) }
        nextContent += 1
        return nextContent
    }

    mutating func inode() -> UInt64 { nextInode += 1; return nextInode }

    mutating func randomNode(kind: FileKind? = nil) -> Node {
        let k = kind ?? [.file, .file, .file, .directory, .directory, .symlink].randomElement(using: &random)!
        return Node(kind: k, content: k == .file ? content() : 0, inode: inode(),
                    mtime: Int64.random(in: 1...1000, using: &random),
                    target: k == .symlink ? Array("t\(content())".utf8) : nil)
    }

    mutating func syncedTrees() -> (Tree, Tree, [RelativePath: BaseEntry]) {
        var local = Tree(), cloud = Tree()
        var base: [RelativePath: BaseEntry] = [:]
        for _ in 0..<Int.random(in: 0...12, using: &random) {
            guard let p = path(in: local) else { continue }
            let node = randomNode()
            var twin = node
            twin.inode = inode()
            local.nodes[p] = node
            cloud.nodes[p] = twin
            base[p] = BaseEntry(local: node.metadata, cloud: twin.metadata,
                                hash: node.kind == .file ? ContentHash(value: UInt64(node.content), size: Int64(node.content % 5)) : nil)
        }
        return (local, cloud, base)
    }

    mutating func removeTree(_ path: RelativePath, from tree: inout Tree) {
        for key in tree.nodes.keys where path.contains(key) { tree.nodes[key] = nil }
    }

    /// One random edit, as a user or another program would make it.
    mutating func edit(_ tree: inout Tree) {
        let existing = tree.nodes.keys.sorted()
        let pick = existing.randomElement(using: &random)
        switch Int.random(in: 0..<9, using: &random) {
        case 0, 1:
            if let p = pick, tree.nodes[p]!.kind == .file {
                tree.nodes[p]!.content = content()
                tree.nodes[p]!.mtime += 1
            }
        case 2: if let p = pick { removeTree(p, from: &tree) }
        case 3, 4: if let p = path(in: tree) { tree.nodes[p] = randomNode() }
        case 5:
            if let p = pick, let q = path(in: tree), !p.contains(q) {
                for key in tree.nodes.keys.sorted() {
                    if let moved = key.rebased(from: p, to: q) { tree.nodes[moved] = tree.nodes[key]; tree.nodes[key] = nil }
                }
            }
        case 6: if let p = pick, tree.nodes[p]!.kind != .symlink { tree.nodes[p]!.mode ^= 0o040 }
        case 7:
            if let p = pick { removeTree(p, from: &tree); tree.nodes[p] = randomNode() }
        default:
            if let p = pick, tree.nodes[p]!.kind == .file { tree.nodes[p]!.mtime += 5 }  // touched, same content
        }
    }
}

@Suite struct ReconcileRandomTests {
    static let namer = ConflictNamer(device: "test", wallTime: WallInstant(nanoseconds: 1_700_000_000_000_000_000))

    /// Reconciles with hashes supplied on demand, as the engine does.
    static func plan(_ base: [RelativePath: BaseEntry], _ local: Tree, _ cloud: Tree) -> Plan {
        var plan = reconcile(base: base, local: local.metadata, cloud: cloud.metadata, namer: namer)
        if !plan.needsHashes.isEmpty {
            let hashes = SideHashes(local: local.hashes.filter { plan.needsHashes.contains(SidePath(.local, $0.key)) },
                                    cloud: cloud.hashes.filter { plan.needsHashes.contains(SidePath(.cloud, $0.key)) })
            plan = reconcile(base: base, local: local.metadata, cloud: cloud.metadata, hashes: hashes, namer: namer)
        }
        return plan
    }

    static func check(seed: UInt64) throws {
        var gen = ScenarioGenerator(random: SeededRandom(seed: seed))
        var (local, cloud, base) = gen.syncedTrees()
        for _ in 0..<Int.random(in: 0...4, using: &gen.random) { gen.edit(&local) }
        for _ in 0..<Int.random(in: 0...4, using: &gen.random) { gen.edit(&cloud) }
        if Bool.random(using: &gen.random) {
            // The same edit on both sides.
            var both = gen
            gen.edit(&local)
            both.edit(&cloud)
            gen.nextContent = max(gen.nextContent, both.nextContent)
            gen.nextInode = max(gen.nextInode, both.nextInode) + 100
        }
        // Content that exists nowhere but on one side must never be lost.
        // What the base holds was already synced; every other content exists on one side only.
        let synced = Set(base.values.compactMap { entry -> String? in
            if let hash = entry.hash { return "c\(hash.value)" }
            return entry.local.symlinkTarget.map { "l\($0)" }
        })
        let precious = local.contents.union(cloud.contents).subtracting(synced)

        let plan = Self.plan(base, local, cloud)
        var applier = PlanApplier(local: local, cloud: cloud, base: base)
        try applier.apply(plan)

        let after = applier.local.contents.union(applier.cloud.contents).union(applier.versions)
        let lost = precious.subtracting(after)
        guard lost.isEmpty else { throw HarnessFailure("content lost: \(lost) plan: \(plan.actions)") }
        for path in Set(applier.local.nodes.keys).union(applier.cloud.nodes.keys) {
            guard applier.local.nodes[path]?.syncedValue == applier.cloud.nodes[path]?.syncedValue else {
                throw HarnessFailure("\(path) differs after sync: \(String(describing: applier.local.nodes[path])) vs \(String(describing: applier.cloud.nodes[path])); plan: \(plan.actions)")
            }
        }
        let second = Self.plan(applier.base, applier.local, applier.cloud)
        guard second.actions.isEmpty else {
            throw HarnessFailure("second reconcile is not empty: \(second.actions); first: \(plan.actions)")
        }
    }

    /// NIMBUS_SEED=N replays one scenario; NIMBUS_RANDOM_RUNS sets how many run.
    @Test func randomTreesConvergeAndLoseNothing() throws {
        var failures: [String] = []
        for seed in SeededRandom.scenarioSeeds("reconcile random test", runs: 10_000, runsVariable: "NIMBUS_RANDOM_RUNS") {
            do { try Self.check(seed: seed) } catch {
                failures.append("seed \(seed): \(error)")
                if failures.count >= 3 { break }
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }
}
