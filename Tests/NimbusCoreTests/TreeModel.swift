import NimbusSystem
@testable import NimbusCore
import NimbusTestSupport
import NimbusVocabulary

/// An in-memory pair of trees with content identities, for testing plans without I/O.
struct Node: Hashable {
    var kind: FileKind
    var content: Int = 0
    var mode: UInt32 = 0o644
    var inode: UInt64
    var mtime: Int64 = 1
    var target: [UInt8]? = nil

    var metadata: FileMetadata {
        FileMetadata(kind: kind, size: kind == .file ? Int64(content % 5) : 0, mtime: kind == .directory ? 7 : mtime,
                     mode: mode, inode: inode, symlinkTarget: target)
    }

    /// What must be equal on both sides once synced.
    var syncedValue: String { "\(kind) \(kind == .file ? content : 0) \(mode) \(target ?? []) \(kind == .symlink ? mtime : 0)" }
}

struct Tree {
    var nodes: [RelativePath: Node] = [:]
    var metadata: [RelativePath: FileMetadata] { nodes.mapValues(\.metadata) }
    var hashes: [RelativePath: ContentHash] {
        nodes.compactMapValues { $0.kind == .file ? ContentHash(value: UInt64(bitPattern: Int64($0.content)), size: Int64($0.content % 5)) : nil }
    }
    /// Every piece of content held: file contents and link targets.
    var contents: Set<String> {
        Set(nodes.values.compactMap { n in
            switch n.kind {
            case .file: "c\(n.content)"
            case .symlink: "l\(n.target!)"
            default: nil
            }
        })
    }
    func children(of dir: RelativePath) -> [RelativePath] {
        nodes.keys.filter { !$0.isRoot && $0.parent == dir }
    }
}

/// Applies a plan the way the engine does, re-checking each expectation, and updates the base
/// after each action. Replaced or deleted cloud content goes to `versions`.
struct PlanApplier {
    var local: Tree
    var cloud: Tree
    var base: [RelativePath: BaseEntry]
    var versions: Set<String> = []
    var nextInode: UInt64 = 1_000_000

    subscript(side: Side) -> Tree {
        get { side == .local ? local : cloud }
        set { if side == .local { local = newValue } else { cloud = newValue } }
    }

    mutating func apply(_ plan: Plan) throws {
        for action in plan.actions { try apply(action) }
    }

    mutating func expect(_ path: RelativePath, on side: Side, _ expected: FileMetadata?) throws {
        let actual = self[side].nodes[path]?.metadata
        guard actual == expected else {
            throw HarnessFailure("\(side) \(path): expected \(String(describing: expected)), found \(String(describing: actual))")
        }
    }

    mutating func keepVersion(_ node: Node, on side: Side) {
        guard side == .cloud else { return }
        if node.kind == .file { versions.insert("c\(node.content)") }
        if node.kind == .symlink { versions.insert("l\(node.target!)") }
    }

    mutating func apply(_ action: Action) throws {
        switch action {
        case .rename(let from, let to, let side, let expected), .preserveConflict(let from, let to, let side, let expected):
            try expect(from, on: side, expected)
            try expect(to, on: side, nil)
            for (path, node) in self[side].nodes {
                if let moved = path.rebased(from: from, to: to) {
                    self[side].nodes[path] = nil
                    self[side].nodes[moved] = node
                }
            }
            if case .rename = action {
                for (path, entry) in base {
                    if let moved = path.rebased(from: from, to: to) { base[path] = nil; base[moved] = entry }
                }
                refreshBase(to)
            }
        case .remove(let path, let side, let expected):
            try expect(path, on: side, expected)
            keepVersion(self[side].nodes[path]!, on: side)
            self[side].nodes[path] = nil
            base[path] = nil
        case .removeDirectory(let path, let side, let expected):
            try expect(path, on: side, expected)
            guard self[side].children(of: path).isEmpty else {
                throw HarnessFailure("rmdir \(path) on \(side): not empty")
            }
            self[side].nodes[path] = nil
            base[path] = nil
        case .makeDirectory(let path, let side, let source):
            try create(path, on: side, Node(kind: .directory, mode: source.mode, inode: 0), replacing: nil)
        case .copy(let path, let side, let source, let replacing):
            try expect(path, on: side.other, source)
            var node = self[side.other].nodes[path]!
            node.inode = 0
            try create(path, on: side, node, replacing: replacing)
        case .makeSymlink(let path, let side, let source, let replacing):
            try expect(path, on: side.other, source)
            try create(path, on: side, Node(kind: .symlink, inode: 0, mtime: source.mtime, target: source.symlinkTarget),
                       replacing: replacing)
        case .setMode(let path, let side, let source, let expected):
            try expect(path, on: side, expected)
            if source.kind == .symlink {
                self[side].nodes[path]!.mtime = source.mtime  // a symlink's time, as the daemon sets it
            } else {
                self[side].nodes[path]!.mode = source.mode
            }
            refreshBase(path)
        case .record(let path, let l, let c, let hash):
            try expect(path, on: .local, l)
            try expect(path, on: .cloud, c)
            base[path] = BaseEntry(local: l, cloud: c, hash: hash)
        case .forget(let path):
            base[path] = nil
        case .rebase(let from, let to):
            for (path, entry) in base {
                if let moved = path.rebased(from: from, to: to) { base[path] = nil; base[moved] = entry }
            }
        case .writePlaceholder, .removePlaceholder, .renamePlaceholder, .movePlaceholder, .retirePlaceholder, .repairPlaceholder,
             .adoptPlaceholder, .adoptLocalFile, .convertPlaceholder, .evict:
            throw HarnessFailure("reconcile never plans placeholder actions: \(action)")
        }
    }

    mutating func create(_ path: RelativePath, on side: Side, _ node: Node, replacing: FileMetadata?) throws {
        try expect(path, on: side, replacing)
        guard path.parent.isRoot || self[side].nodes[path.parent]?.kind == .directory else {
            throw HarnessFailure("create \(path) on \(side): parent missing")
        }
        if let old = self[side].nodes[path] { keepVersion(old, on: side) }
        var node = node
        node.inode = nextInode
        nextInode += 1
        self[side].nodes[path] = node
        refreshBase(path)
    }

    mutating func refreshBase(_ path: RelativePath) {
        guard let l = local.nodes[path], let c = cloud.nodes[path] else { base[path] = nil; return }
        base[path] = BaseEntry(local: l.metadata, cloud: c.metadata)
    }
}
