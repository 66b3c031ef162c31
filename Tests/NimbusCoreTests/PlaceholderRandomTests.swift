import Foundation
import NimbusVocabulary
import Testing
import NimbusSystem
@testable import NimbusCore
import NimbusTestSupport

/// The pure pipeline of one pass in on-demand mode — fold, reconcile, adapt — on a model
/// pair with placeholders, applied the way the executor does (every expectation re-checked),
/// round after round, from seeded random edits: placeholder files deleted, renamed with and
/// without their suffix, written into, stray copies, files named like a placeholder, cloud
/// changes. Nothing may be lost, no placeholder's text may reach the cloud, and the pair
/// must settle with every cloud file either here or stood for by a placeholder.
///
/// The style is a parameter: the real-name style joins by adding it to `arguments` once
/// `PlaceholderModel` writes its placeholders (at the real path, known by `placeholders`).
@Suite struct PlaceholderRandomTests {
    @Test(arguments: [PlaceholderStyle.suffix])
    func randomPlaceholderScenariosSettleAndLoseNothing(_ style: PlaceholderStyle) throws {
        let seeds = SeededRandom.scenarioSeeds("placeholder random test (\(style))", runs: 3_000, runsVariable: "NIMBUS_RANDOM_RUNS")
        var failures: [String] = []
        for seed in seeds {
            do { try PlaceholderModel.check(seed: seed, style: style) } catch {
                failures.append("seed \(seed): \(error)")
                if failures.count >= 3 { break }
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }
}

/// A flat pair of files with placeholders, and the executor's effect of each action.
struct PlaceholderModel {
    let style: PlaceholderStyle
    var random: SeededRandom
    var local = Tree()
    var cloud = Tree()
    var base: [RelativePath: BaseEntry] = [:]
    /// Paths the journal records as placeholders.
    var placeholders = Set<RelativePath>()
    /// The text of each local placeholder file, by inode; files without are content.
    var texts: [UInt64: [UInt8]] = [:]
    /// Paths the user pinned: downloaded rather than placeholders.
    var pinned = Set<RelativePath>()
    var versions: Set<String> = []
    var nextInode: UInt64 = 10
    var nextContent = 1
    var nextPlaceholder = -1
    var clock: Int64 = 1_000
    /// Passes, for conflict names: as in the engine, a later pass names with a later time.
    var passes: Int64 = 0
    var namer: ConflictNamer { ConflictNamer(device: "model", wallTime: WallInstant(nanoseconds: 1_700_000_000_000_000_000) + .seconds(passes)) }

    static let names = ["a", "b", "c.txt", "a.nimbus"]

    init(seed: UInt64, style: PlaceholderStyle) {
        self.style = style
        random = SeededRandom(seed: seed)
    }

    // MARK: - Building blocks

    mutating func inode() -> UInt64 { nextInode += 1; return nextInode }
    mutating func content() -> Int { nextContent += 1; return nextContent }
    mutating func tick() -> Int64 { clock += 1; return clock }

    func node(_ side: Side, _ path: RelativePath) -> Node? { side == .local ? local.nodes[path] : cloud.nodes[path] }

    mutating func set(_ side: Side, _ path: RelativePath, _ node: Node?) {
        if side == .local { local.nodes[path] = node } else { cloud.nodes[path] = node }
    }

    func expect(_ side: Side, _ path: RelativePath, _ expected: FileMetadata?) throws {
        guard node(side, path)?.metadata == expected else { throw ChangedSincePlannedModel() }
    }

    /// A placeholder's text is never content: its marker is negative.
    mutating func placeholderNode(for path: RelativePath, cloud source: FileMetadata) -> Node {
        nextPlaceholder -= 1
        let node = Node(kind: .file, content: nextPlaceholder, inode: inode(), mtime: source.mtime)
        texts[node.inode] = Placeholder.contents(for: path, cloud: source)
        return node
    }

    func bytes(of file: RelativePath) -> PlaceholderFileContents {
        guard let node = local.nodes[file], node.kind == .file else { return .unreadable }
        return .bytes(texts[node.inode] ?? Array("content \(node.content)\n".utf8))
    }

    var records: RecordsModel {
        RecordsModel(records: base.reduce(into: [:]) { $0[$1.key] = PlaceholderRecord(base: $1.value, isPlaceholder: placeholders.contains($1.key)) })
    }

    // MARK: - One pass

    /// Fold, reconcile and adapt as the engine does; returns the actions in execution order.
    func plan() -> [Action] {
        let records = records
        var contents: [RelativePath: PlaceholderFileContents] = [:]
        var fold = foldPlaceholders(style: style, scope: [.root], base: base, local: local.metadata, cloud: cloud.metadata,
                                    records: records, namer: namer)
        for _ in 0..<3 where !fold.needsContents.isEmpty {
            for file in fold.needsContents { contents[file] = bytes(of: file) }
            fold = foldPlaceholders(style: style, scope: [.root], base: base, local: local.metadata, cloud: cloud.metadata,
                                    records: records, contents: contents, namer: namer)
        }
        var views = (base: base, cloud: cloud.metadata)
        for path in fold.withheld { views.base[path] = nil; views.cloud[path] = nil }
        var plan = reconcile(base: views.base, local: fold.local, cloud: views.cloud, namer: namer)
        if !plan.needsHashes.isEmpty {
            let hashes = SideHashes(local: local.hashes.filter { plan.needsHashes.contains(SidePath(.local, $0.key)) && fold.placeholders[$0.key] == nil },
                                    cloud: cloud.hashes.filter { plan.needsHashes.contains(SidePath(.cloud, $0.key)) })
            plan = reconcile(base: views.base, local: fold.local, cloud: views.cloud, hashes: hashes, namer: namer)
        }
        let local = fold.local
        let adapted = adaptForPlaceholders(plan, placeholders: fold.placeholders, strays: fold.strays, style: style, local: local,
                                           cloud: views.cloud) { path in
            pinned.contains(path) || (style.hasNameOfItsOwn && (style.file(for: path).map { local[$0] != nil } ?? true))
        }
        return fold.repairs + adapted.actions
    }

    /// Runs passes until one plans nothing; an action whose expectation fails is skipped and
    /// looked at again, as in the engine.
    mutating func settle() throws -> Int {
        for round in 0..<8 {
            passes += 1
            let actions = plan()
            if actions.isEmpty { return round }
            if Self.tracing { print("round \(round): local \(local.nodes.mapValues(\.content).sorted { $0.key < $1.key }), cloud \(cloud.nodes.mapValues(\.content).sorted { $0.key < $1.key }), placeholders \(placeholders.sorted())") }
            for action in actions {
                if Self.tracing { print("  \(action)") }
                do { try apply(action) } catch is ChangedSincePlannedModel {}
                try checkNoPlaceholderInTheCloud(after: action)
            }
        }
        throw HarnessFailure("no settling after 8 passes; still planned: \(plan())")
    }

    func checkNoPlaceholderInTheCloud(after action: Action) throws {
        if let leaked = cloud.nodes.first(where: { $0.value.kind == .file && $0.value.content < 0 }) {
            throw HarnessFailure("the placeholder text of \(leaked.key) reached the cloud after \(action)")
        }
    }
}

struct ChangedSincePlannedModel: Error {}

extension PlaceholderModel {
    /// NIMBUS_TRACE=1: every planned action, for replaying a seed.
    static var tracing: Bool { ProcessInfo.processInfo.environment["NIMBUS_TRACE"] != nil }
}
