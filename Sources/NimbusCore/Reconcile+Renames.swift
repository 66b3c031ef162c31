import NimbusVocabulary

extension Reconciler {
    /// Finds entries that moved on `side` (same inode at a new path) and, where the other side
    /// still holds the old entry unchanged, plans the same rename there instead of a delete
    /// and a fresh copy. Base and the other side's view are then re-keyed to the new path, so
    /// the per-path pass sees what is left to do (e.g. a file edited inside a moved folder).
    mutating func propagateRenames(detectedOn side: Side) {
        let other = side.other
        for (from, to) in detectRenames(on: side, currentDifferences()[side]) {
            guard let entry = base[from], views[side]![from] == nil || views[side]![from]!.inode != entry[side].inode,
                  let moved = views[side]![to], moved.inode == entry[side].inode
            else { continue }
            let otherOld = views[other]![from], otherNew = views[other]![to]
            if let otherNew, otherOld == nil, isSameEntryMoved(entry[other], otherNew) {
                // Both sides made the same rename.
                moves.append(.rebase(from: from, to: to))
                rekey(from: from, to: to, views: [])
            } else if let otherOld, otherNew == nil,
                      Change.between(base: entry[other], current: otherOld) == .unchanged,
                      let newFolders = foldersToCreate(for: to, on: other, from: side) {
                // Folders new on `side` that the entry moved into are created first.
                for folder in newFolders {
                    let meta = views[side]![folder]!
                    moves.append(.makeDirectory(folder, on: other, source: meta))
                    views[other]![folder] = meta
                    settled.insert(folder)
                }
                differences = nil
                moves.append(.rename(from: from, to: to, on: other, expected: otherOld))
                rekey(from: from, to: to, views: [other])
            }
            // Otherwise the rename is not propagated as such: the per-path pass sees a delete
            // and a create, and a change on the other side beats the delete.
        }
    }

    /// The folders (outermost first) to create on `other` so that `path` can be renamed into
    /// place there: folders that are new on `side`. Nil when the parent is missing on `other`
    /// for another reason (then the rename is not propagated as such).
    func foldersToCreate(for path: RelativePath, on other: Side, from side: Side) -> [RelativePath]? {
        var missing: [RelativePath] = []
        var folder = path.parent
        while !folder.isRoot && views[other]![folder] == nil {
            guard views[side]![folder]?.kind == .directory, base[folder] == nil else { return nil }
            missing.append(folder)
            folder = folder.parent
        }
        guard folder.isRoot || views[other]![folder]?.kind == .directory else { return nil }
        return missing.reversed()
    }

    /// Rename pairs on `side`, outermost only (the children of a moved directory move with it).
    /// `differing` holds every path on `side` whose entry is not its base: a path whose
    /// inode changed is among them.
    func detectRenames(on side: Side, _ differing: [RelativePath]) -> [(RelativePath, RelativePath)] {
        let view = views[side]!
        var vanished: [UInt64: RelativePath] = [:]
        var ambiguous: Set<UInt64> = []
        for path in differing {
            guard let old = base[path]?[side] else { continue }
            if let current = view[path], current.inode == old.inode { continue }
            if vanished.updateValue(path, forKey: old.inode) != nil { ambiguous.insert(old.inode) }
        }
        guard !vanished.isEmpty else { return [] }
        var pairs: [(RelativePath, RelativePath)] = []
        for path in differing {
            guard let current = view[path] else { continue }
            if let entry = base[path], entry[side].inode == current.inode { continue }
            guard !ambiguous.contains(current.inode), let from = vanished[current.inode], from != path,
                  !from.contains(path), !path.contains(from),
                  let old = base[from]?[side], isSameEntryMoved(old, current)
            else { continue }
            pairs.append((from, path))
        }
        pairs.sort { $0.0 < $1.0 }
        var outermost: [(RelativePath, RelativePath)] = []
        for pair in pairs {
            let impliedByParent = outermost.contains { outer in
                outer.0.contains(pair.0) && pair.0.rebased(from: outer.0, to: outer.1) == pair.1
            }
            if !impliedByParent { outermost.append(pair) }
        }
        return outermost
    }

    /// A rename keeps the inode, kind, size, mtime and link target. Checking more than the
    /// inode guards against a deleted file's inode being reused by an unrelated new one.
    func isSameEntryMoved(_ old: FileMetadata, _ new: FileMetadata) -> Bool {
        guard old.kind == new.kind, old.inode == new.inode else { return false }
        switch old.kind {
        case .file: return old.size == new.size && old.mtime == new.mtime
        case .symlink: return old.symlinkTarget == new.symlinkTarget
        case .directory: return true
        case .special: return false
        }
    }

    /// Moves `from` and everything below it to `to` in the base and in the given views.
    mutating func rekey(from: RelativePath, to: RelativePath, views sides: [Side]) {
        differences = nil
        base = Self.rekeyed(base, from: from, to: to)
        for side in sides {
            for path in views[side]!.keys where from.contains(path) {
                origins[side]![path.rebased(from: from, to: to)!] = origin(path, on: side)
            }
            views[side] = Self.rekeyed(views[side]!, from: from, to: to)
        }
    }

    /// Where the entry now seen at `path` on `side` is on disk.
    func origin(_ path: RelativePath, on side: Side) -> RelativePath { origins[side]![path] ?? path }

    static func rekeyed<V>(_ map: [RelativePath: V], from: RelativePath, to: RelativePath) -> [RelativePath: V] {
        var result = map
        for (path, value) in map {
            guard let moved = path.rebased(from: from, to: to) else { continue }
            result[path] = nil
            result[moved] = value
        }
        return result
    }

    /// Directories with a created or modified entry somewhere below them on `side`.
    func directoriesWithChanges(on side: Side, _ differing: [RelativePath]) -> Set<RelativePath> {
        let view = views[side]!
        var result: Set<RelativePath> = []
        for path in differing {
            guard let current = view[path] else { continue }
            let change = Change.between(base: base[path]?[side], current: current)
            guard change.isChange else { continue }
            var ancestor = path.parent
            while !ancestor.isRoot, result.insert(ancestor).inserted { ancestor = ancestor.parent }
        }
        return result
    }
}
