import NimbusCore
import NimbusSystem

/// The engine's in-memory view of the journal: records by path, plus each directory's
/// children so a subtree can be found without scanning every record.
struct SyncIndex {
    private(set) var records: [RelativePath: PathRecord] = [:]
    private var children: [RelativePath: Set<RelativePath>] = [:]
    /// Where each side's inode was last synced, to find the source of a rename whose
    /// destination was seen first.
    private var inodes: [Side: [UInt64: RelativePath]] = [.local: [:], .cloud: [:]]

    init(_ records: [RelativePath: PathRecord] = [:]) {
        for (path, record) in records { self[path] = record }
    }

    var count: Int { records.count }

    subscript(path: RelativePath) -> PathRecord? {
        get { records[path] }
        set {
            if let old = records[path] {
                for side in Side.allCases where inodes[side]![old.base[side].inode] == path {
                    inodes[side]![old.base[side].inode] = nil
                }
            }
            if let newValue {
                if records.updateValue(newValue, forKey: path) == nil { link(path) }
                for side in Side.allCases { inodes[side]![newValue.base[side].inode] = path }
            } else if records.removeValue(forKey: path) != nil {
                unlink(path)
            }
        }
    }

    /// The synced path whose entry on `side` had `inode`.
    func path(ofInode inode: UInt64, on side: Side) -> RelativePath? { inodes[side]![inode] }

    /// `root` (if recorded) and every recorded path below it.
    func subtree(_ root: RelativePath) -> [RelativePath] {
        if root.isRoot { return Array(records.keys) }
        var result: [RelativePath] = records[root] == nil ? [] : [root]
        var stack = [root]
        while let dir = stack.popLast() {
            for child in children[dir] ?? [] {
                result.append(child)
                stack.append(child)
            }
        }
        return result
    }

    /// Moves the records of `from` and everything below it to `to`.
    mutating func rekey(from: RelativePath, to: RelativePath) {
        let moved = subtree(from).map { ($0, records[$0]!) }
        for (path, _) in moved { self[path] = nil }
        for (path, record) in moved { self[path.rebased(from: from, to: to)!] = record }
    }

    private mutating func link(_ path: RelativePath) {
        // Parents are recorded before their children (plans create parents first), so a
        // link to the direct parent is enough to reach every record from its ancestors.
        children[path.parent, default: []].insert(path)
    }

    private mutating func unlink(_ path: RelativePath) {
        let parent = path.parent
        children[parent]?.remove(path)
        if children[parent]?.isEmpty == true { children[parent] = nil }
    }
}
