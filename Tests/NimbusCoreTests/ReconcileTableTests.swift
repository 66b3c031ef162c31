import NimbusVocabulary
import Testing
import NimbusSystem
@testable import NimbusCore
import NimbusTestSupport

/// Builds a synced pair of trees from a compact description, edits each side, reconciles.
struct Case: CustomTestStringConvertible, Sendable {
    var name: String
    var synced: [(String, FileKind)] = []
    var local: @Sendable (inout Tree, inout ScenarioGenerator) -> Void = { _, _ in }
    var cloud: @Sendable (inout Tree, inout ScenarioGenerator) -> Void = { _, _ in }
    var expected: [String]
    var testDescription: String { name }
}

func p(_ s: String) -> RelativePath { try! RelativePath(validating: s) }

extension Action {
    var summary: String {
        switch self {
        case .rename(let f, let t, let s, _): "rename \(f)→\(t) on \(s)"
        case .preserveConflict(let f, let t, let s, _): "keep \(f) as \(t) on \(s)"
        case .remove(let f, let s, _): "remove \(f) on \(s)"
        case .removeDirectory(let f, let s, _): "rmdir \(f) on \(s)"
        case .makeDirectory(let f, let s, _): "mkdir \(f) on \(s)"
        case .copy(let f, let s, _, let r): "copy \(f) to \(s)\(r == nil ? "" : " replacing")"
        case .makeSymlink(let f, let s, _, _): "symlink \(f) on \(s)"
        case .setMode(let f, let s, _, _): "chmod \(f) on \(s)"
        case .record(let f, _, _, _): "record \(f)"
        case .forget(let f): "forget \(f)"
        case .rebase(let f, let t): "rebase \(f)→\(t)"
        case .writePlaceholder(let p, _, _): "placeholder \(p)"
        case .removePlaceholder(let p, _): "remove placeholder \(p)"
        case .renamePlaceholder(let f, let t, _): "rename placeholder \(f)→\(t)"
        case .movePlaceholder(let f, let t, _): "move placeholder file \(f)→\(t)"
        case .retirePlaceholder(let f, _): "retire placeholder file \(f)"
        case .repairPlaceholder(let p, let f, _, _): "repair placeholder \(f) of \(p)"
        case .adoptPlaceholder(let p, _, _): "adopt placeholder \(p)"
        case .adoptLocalFile(let p, _, _): "adopt local file \(p)"
        case .convertPlaceholder(let p, let style, _, _): "convert placeholder \(p) to \(style)"
        case .evict(let p, _, _): "evict \(p)"
        }
    }
}

extension Tree {
    mutating func write(_ path: String, _ gen: inout ScenarioGenerator, content: Int? = nil) {
        let key = p(path)
        var node = nodes[key] ?? Node(kind: .file, inode: gen.inode())
        node.content = content ?? gen.content()
        node.mtime += 1
        nodes[key] = node
    }
    mutating func mkdir(_ path: String, _ gen: inout ScenarioGenerator) { nodes[p(path)] = Node(kind: .directory, inode: gen.inode()) }
    mutating func delete(_ path: String) { for k in nodes.keys where p(path).contains(k) { nodes[k] = nil } }
    mutating func move(_ from: String, _ to: String) {
        for k in nodes.keys.sorted() { if let m = k.rebased(from: p(from), to: p(to)) { nodes[m] = nodes[k]; nodes[k] = nil } }
    }
}

@Suite struct ReconcileTableTests {
    static let cases: [Case] = [
        Case(name: "nothing changed", synced: [("a", .file), ("d", .directory)], expected: []),
        Case(name: "local create", local: { t, g in t.write("new", &g) }, expected: ["copy new to cloud"]),
        Case(name: "cloud create", cloud: { t, g in t.write("new", &g) }, expected: ["copy new to local"]),
        Case(name: "local modify", synced: [("a", .file)], local: { t, g in t.write("a", &g) },
             expected: ["copy a to cloud replacing"]),
        Case(name: "cloud modify", synced: [("a", .file)], cloud: { t, g in t.write("a", &g) },
             expected: ["copy a to local replacing"]),
        Case(name: "local delete", synced: [("a", .file)], local: { t, _ in t.delete("a") }, expected: ["remove a on cloud"]),
        Case(name: "cloud delete", synced: [("a", .file)], cloud: { t, _ in t.delete("a") }, expected: ["remove a on local"]),
        Case(name: "local rename propagates as rename", synced: [("a", .file)], local: { t, _ in t.move("a", "b") },
             expected: ["rename a→b on cloud"]),
        Case(name: "cloud rename of a folder moves its children along", synced: [("d", .directory), ("d/x", .file)],
             cloud: { t, _ in t.move("d", "e") }, expected: ["rename d→e on local"]),
        Case(name: "folder renamed and a file inside edited", synced: [("d", .directory), ("d/x", .file)],
             local: { t, g in t.move("d", "e"); t.write("e/x", &g) }, expected: ["rename d→e on cloud", "copy e/x to cloud replacing"]),
        Case(name: "a move into a new folder creates the folder, then renames", synced: [("a", .file)],
             local: { t, g in t.mkdir("new", &g); t.move("a", "new/a") }, expected: ["mkdir new on cloud", "rename a→new/a on cloud"]),
        Case(name: "mkdir", local: { t, g in t.mkdir("d", &g) }, expected: ["mkdir d on cloud"]),
        Case(name: "two folders without a base differing in their modes: the local mode wins",
             local: { t, g in t.mkdir("d", &g) }, cloud: { t, g in t.mkdir("d", &g); t.nodes[p("d")]!.mode = 0o700 },
             expected: ["chmod d on cloud"]),
        Case(name: "two folders without a base, one without the owner's write bit: the read-only one wins (local)",
             local: { t, g in t.mkdir("d", &g); t.nodes[p("d")]!.mode = 0o555 }, cloud: { t, g in t.mkdir("d", &g); t.nodes[p("d")]!.mode = 0o755 },
             expected: ["chmod d on cloud"]),
        Case(name: "two folders without a base, one without the owner's write bit: the read-only one wins (cloud, a download cut short)",
             local: { t, g in t.mkdir("d", &g); t.nodes[p("d")]!.mode = 0o755 }, cloud: { t, g in t.mkdir("d", &g); t.nodes[p("d")]!.mode = 0o555 },
             expected: ["chmod d on local"]),
        Case(name: "rmdir", synced: [("d", .directory)], local: { t, _ in t.delete("d") }, expected: ["rmdir d on cloud"]),
        Case(name: "rm -r removes children first", synced: [("d", .directory), ("d/x", .file)], local: { t, _ in t.delete("d") },
             expected: ["remove d/x on cloud", "rmdir d on cloud"]),
        Case(name: "chmod", synced: [("a", .file)], local: { t, _ in t.nodes[p("a")]!.mode = 0o600 }, expected: ["chmod a on cloud"]),
        Case(name: "symlink", local: { t, g in t.nodes[p("l")] = Node(kind: .symlink, inode: g.inode(), target: Array("x".utf8)) },
             expected: ["symlink l on cloud"]),
        Case(name: "a symlink's own time changed (touch -h): it is synced, not left local",
             synced: [("l", .symlink)], local: { t, _ in t.nodes[p("l")]!.mtime += 100 }, expected: ["chmod l on cloud"]),
        Case(name: "a symlink touched on both sides: the local time wins",
             synced: [("l", .symlink)], local: { t, _ in t.nodes[p("l")]!.mtime += 100 },
             cloud: { t, _ in t.nodes[p("l")]!.mtime += 50 }, expected: ["chmod l on cloud"]),
        Case(name: "both changed to the same content", synced: [("a", .file)],
             local: { t, g in t.write("a", &g, content: 99) }, cloud: { t, g in t.write("a", &g, content: 99) },
             expected: ["record a"]),
        Case(name: "both created the same file (interrupted copy)", local: { t, g in t.write("a", &g, content: 42) },
             cloud: { t, g in t.write("a", &g, content: 42) }, expected: ["record a"]),
        Case(name: "modified here, deleted there: the change wins", synced: [("a", .file)],
             local: { t, g in t.write("a", &g) }, cloud: { t, _ in t.delete("a") }, expected: ["copy a to cloud"]),
        Case(name: "deleted on both sides", synced: [("a", .file)], local: { t, _ in t.delete("a") },
             cloud: { t, _ in t.delete("a") }, expected: ["forget a"]),
        Case(name: "modified differently: conflict keeps both", synced: [("a.txt", .file)],
             local: { t, g in t.write("a.txt", &g, content: 11) }, cloud: { t, g in t.write("a.txt", &g, content: 12) },
             expected: ["keep a.txt as a (conflict from test 2023-11-14 221320).txt on local", "copy a.txt to local",
                        "copy a (conflict from test 2023-11-14 221320).txt to cloud"]),
        Case(name: "file became a folder", synced: [("a", .file)], local: { t, g in t.delete("a"); t.mkdir("a", &g) },
             expected: ["remove a on cloud", "mkdir a on cloud"]),
        Case(name: "folder here, file there: the folder keeps the name", local: { t, g in t.mkdir("a", &g) },
             cloud: { t, g in t.write("a", &g) },
             expected: ["keep a as a (conflict from test 2023-11-14 221320) on cloud", "mkdir a on cloud",
                        "copy a (conflict from test 2023-11-14 221320) to local"]),
        Case(name: "folder deleted here while a file was added inside there", synced: [("d", .directory), ("d/x", .file)],
             local: { t, _ in t.delete("d") }, cloud: { t, g in t.write("d/new", &g) },
             expected: ["remove d/x on cloud", "mkdir d on local", "copy d/new to local"]),
    ]

    @Test(arguments: cases)
    func reconcileCase(_ c: Case) throws {
        var gen = ScenarioGenerator(random: SeededRandom(seed: 1))
        var local = Tree(), cloud = Tree()
        var base: [RelativePath: BaseEntry] = [:]
        for (path, kind) in c.synced {
            let node = Node(kind: kind, content: kind == .file ? gen.content() : 0, inode: gen.inode())
            var twin = node
            twin.inode = gen.inode()
            local.nodes[p(path)] = node
            cloud.nodes[p(path)] = twin
            base[p(path)] = BaseEntry(local: node.metadata, cloud: twin.metadata)
        }
        c.local(&local, &gen)
        c.cloud(&cloud, &gen)
        let plan = ReconcileRandomTests.plan(base, local, cloud)
        #expect(plan.actions.map(\.summary) == c.expected)
        // And the plan really converges.
        var applier = PlanApplier(local: local, cloud: cloud, base: base)
        try applier.apply(plan)
        #expect(applier.local.nodes.mapValues(\.syncedValue) == applier.cloud.nodes.mapValues(\.syncedValue))
        #expect(ReconcileRandomTests.plan(applier.base, applier.local, applier.cloud).actions.isEmpty)
    }

    /// The log line says which version kept the name: a folder here keeps it, and the cloud's
    /// file becomes the copy (not the other way round, as it once said).
    @Test func aConflictSaysWhichVersionKeptTheName() {
        let folder = FileMetadata(kind: .directory, size: 0, mtime: 1, mode: 0o755, inode: 5)
        let file = FileMetadata(kind: .file, size: 3, mtime: 2, mode: 0o644, inode: 6)
        let mixed = reconcile(base: [:], local: [p("a"): folder], cloud: [p("a"): file], namer: ReconcileRandomTests.namer)
        #expect(mixed.conflicts.map(\.description) == ["conflict on a: a directory here and a file in the cloud; this device's "
            + "directory keeps the name, the cloud's file is kept as a (conflict from test 2023-11-14 221320)"])
        let reversed = reconcile(base: [:], local: [p("a"): file], cloud: [p("a"): folder], namer: ReconcileRandomTests.namer)
        #expect(reversed.conflicts.map(\.description) == ["conflict on a: a file here and a directory in the cloud; the cloud's "
            + "directory keeps the name, this device's file is kept as a (conflict from test 2023-11-14 221320)"])
        var other = file
        other.size = 4
        let both = reconcile(base: [:], local: [p("a"): file], cloud: [p("a"): other], namer: ReconcileRandomTests.namer)
        #expect(both.conflicts.map(\.description) == ["conflict on a: both sides changed it; the cloud's version keeps the "
            + "name, this device's version is kept as a (conflict from test 2023-11-14 221320)"])
    }

    @Test func specialFilesAreSkipped() {
        let fifo = FileMetadata(kind: .special, size: 0, mtime: 1, mode: 0o644, inode: 5)
        let plan = reconcile(base: [:], local: [p("fifo"): fifo], cloud: [:], namer: ReconcileRandomTests.namer)
        #expect(plan.actions.isEmpty)
        #expect(plan.skipped == [p("fifo")])
    }

    @Test func sameSizeNeedsHashesBeforeDeciding() {
        let a = FileMetadata(kind: .file, size: 3, mtime: 1, mode: 0o644, inode: 5)
        let b = FileMetadata(kind: .file, size: 3, mtime: 2, mode: 0o644, inode: 6)
        let plan = reconcile(base: [:], local: [p("f"): a], cloud: [p("f"): b], namer: ReconcileRandomTests.namer)
        #expect(plan.actions.isEmpty)
        #expect(plan.needsHashes == [SidePath(.local, p("f")), SidePath(.cloud, p("f"))])
    }

    @Test func conflictNamesAvoidTakenNames() {
        let namer = ConflictNamer(device: "lap/top", wallTime: .origin)
        let name = namer.name(for: p("dir/.bashrc")) { $0 == p("dir/.bashrc (conflict from lap-top 1970-01-01 000000)") }
        #expect(name == p("dir/.bashrc (conflict from lap-top 1970-01-01 000000 2)"))
    }
}
