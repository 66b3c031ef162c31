import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// The engine's in-memory view of the journal: records by path, plus each directory's
/// children so a subtree can be found without scanning every record.
///
/// Records are kept densely in an array, found through a dictionary of slot numbers: a
/// dictionary of whole records would be up to twice as large as needed, since its storage
/// grows in powers of two (at 100 000 records, 262 144 slots of 170 bytes each).
struct SyncIndex {
    private var slots: [RelativePath: Int32] = [:]
    private var paths: [RelativePath] = []
    private var values: [PathRecord] = []
    private var children: [RelativePath: Set<RelativePath>] = [:]
    /// Where each side's inode was last synced, to find the source of a rename whose
    /// destination was seen first.
    private var inodes: [Side: [UInt64: RelativePath]] = [.local: [:], .cloud: [:]]
    /// The local inodes synced under several names (hard links), with all those names: a
    /// write through one name changes every one of them. Empty in most trees.
    private var localLinks: [UInt64: Set<RelativePath>] = [:]
    /// How many records are in conflict, kept as they change: `status` asks often, and
    /// counting would hold the engine's lock for a walk over every record.
    private(set) var conflicts = 0
    /// How many records stand for a placeholder: none in mirror mode, so the checks that only
    /// placeholders need cost nothing there.
    private(set) var placeholders = 0

    init(_ records: [RelativePath: PathRecord] = [:]) {
        slots.reserveCapacity(records.count)
        paths.reserveCapacity(records.count)
        values.reserveCapacity(records.count)
        for (path, record) in records { self[path] = record }
    }

    var count: Int { paths.count }

    /// Every record, in no particular order.
    var all: Zip2Sequence<[RelativePath], [PathRecord]> { zip(paths, values) }

    /// Every record as a dictionary (tests, tools); `all` does not copy.
    var records: [RelativePath: PathRecord] { Dictionary(uniqueKeysWithValues: all) }

    subscript(path: RelativePath) -> PathRecord? {
        get { slots[path].map { values[Int($0)] } }
        set {
            let slot = slots[path].map(Int.init)
            if let slot {
                let old = values[slot]
                if old.conflictCopy != nil { conflicts -= 1 }
                if old.isPlaceholder { placeholders -= 1 }
                // Another name of the same file takes over (a hard link), if there is one.
                let otherName = localLinks[old.base.local.inode]?.first { $0 != path }
                unlinkLocalName(path, inode: old.base.local.inode)
                for side in Side.allCases where inodes[side]![old.base[side].inode] == path {
                    inodes[side]![old.base[side].inode] = side == .local ? otherName : nil
                }
            }
            if let newValue {
                if newValue.conflictCopy != nil { conflicts += 1 }
                if newValue.isPlaceholder { placeholders += 1 }
                if let slot {
                    values[slot] = newValue
                } else {
                    slots[path] = Int32(paths.count)
                    paths.append(path)
                    values.append(newValue)
                    link(path)
                }
                // The stored path, not the caller's equal copy (from a watch event, say):
                // every map then shares one buffer per path instead of holding copies.
                let stored = paths[slot ?? paths.count - 1]
                linkLocalName(stored, inode: newValue.base.local.inode, kind: newValue.base.kind)
                for side in Side.allCases { inodes[side]![newValue.base[side].inode] = stored }
            } else if let slot {
                // The last record moves into the hole, so the array stays dense.
                let last = paths.count - 1
                if slot != last {
                    paths[slot] = paths[last]
                    values[slot] = values[last]
                    slots[paths[slot]] = Int32(slot)
                }
                paths.removeLast()
                values.removeLast()
                slots[path] = nil
                unlink(path)
            }
        }
    }

    /// Gives back the room the record arrays grew into (up to twice their count) once a
    /// large pass is over: at 100 000 records that is several megabytes.
    mutating func shrinkToFit() {
        guard values.capacity > values.count + values.count / 8 + 64 else { return }
        values = values.withUnsafeBufferPointer { Array($0) }
        paths = paths.withUnsafeBufferPointer { Array($0) }
    }

    /// The synced path whose entry on `side` had `inode`.
    func path(ofInode inode: UInt64, on side: Side) -> RelativePath? { inodes[side]![inode] }

    /// The other synced local names of the file at `path`, when it has several (hard links).
    func otherLocalNames(of path: RelativePath) -> Set<RelativePath> {
        guard !localLinks.isEmpty, let inode = self[path]?.base.local.inode,
              var names = localLinks[inode] else { return [] }
        names.remove(path)
        return names
    }

    /// Notes `path` as a name of local file `inode` when another record has that inode too.
    private mutating func linkLocalName(_ path: RelativePath, inode: UInt64, kind: FileKind) {
        guard kind == .file, inode != 0 else { return }
        if localLinks[inode] != nil {
            localLinks[inode]!.insert(path)
        } else if let other = inodes[.local]![inode], other != path, let record = self[other],
                  record.base.kind == .file, record.base.local.inode == inode {
            localLinks[inode] = [other, path]
        }
    }

    private mutating func unlinkLocalName(_ path: RelativePath, inode: UInt64) {
        guard localLinks[inode]?.remove(path) != nil else { return }
        if localLinks[inode]!.count < 2 { localLinks[inode] = nil }
    }

    /// `root` (if recorded) and every recorded path below it.
    func subtree(_ root: RelativePath) -> [RelativePath] {
        if root.isRoot { return paths }
        var result: [RelativePath] = slots[root] == nil ? [] : [root]
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
        let moved = subtree(from).map { ($0, self[$0]!) }
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
