import NimbusVocabulary

/// Both sides changed the same path since the last sync (DESIGN §4): a deletion meets a
/// change (the change wins), the same content meets itself (recorded, modes aligned), and
/// anything else is a conflict in which nothing is overwritten (`keepBoth`).
extension Reconciler {
    mutating func reconcileBothChanged(_ path: RelativePath, entry: BaseEntry?,
                                       local l: FileMetadata?, cloud c: FileMetadata?) {
        switch (l, c) {
        case (nil, nil):
            // Deleted on both sides: forget it.
            if entry != nil { records.append(.forget(path)) }
        case (nil, let c?):
            // Deleted here, changed there: a change beats a delete.
            create(path, on: .local, from: c, replacing: nil)
        case (let l?, nil):
            create(path, on: .cloud, from: l, replacing: nil)
        case (let l?, let c?):
            reconcileBothPresent(path, local: l, cloud: c)
        }
    }

    /// Both sides hold something new at `path`.
    mutating func reconcileBothPresent(_ path: RelativePath, local l: FileMetadata, cloud c: FileMetadata) {
        if l.kind == c.kind {
            switch l.kind {
            case .directory:
                // Directories merge; their children are reconciled one by one.
                agree(path, local: l, cloud: c, hash: nil)
                return
            case .symlink where l.symlinkTarget == c.symlinkTarget:
                agree(path, local: l, cloud: c, hash: nil)
                return
            case .file where l.size == c.size:
                let onDisk = (local: origin(path, on: .local), cloud: origin(path, on: .cloud))
                guard let lh = hashes.local[onDisk.local], let ch = hashes.cloud[onDisk.cloud] else {
                    plan.needsHashes.insert(SidePath(.local, onDisk.local))
                    plan.needsHashes.insert(SidePath(.cloud, onDisk.cloud))
                    return
                }
                if lh == ch {
                    // Same content on both sides (also how an interrupted copy is recovered).
                    agree(path, local: l, cloud: c, hash: lh)
                    return
                }
            default: break
            }
        }
        keepBoth(path, local: l, cloud: c)
    }

    /// Both sides agree on content: record them, after aligning modes (local wins those,
    /// but see `isNarrowerFolder`).
    mutating func agree(_ path: RelativePath, local l: FileMetadata, cloud c: FileMetadata, hash: ContentHash?) {
        if Self.isNarrowerFolder(c, than: l) {
            creations.append(.setMode(path, on: .local, source: c, expected: l))
        } else if (l.mode != c.mode && l.kind != .symlink) || (l.kind == .symlink && l.mtime != c.mtime) {
            creations.append(.setMode(path, on: .cloud, source: l, expected: c))
        } else {
            records.append(.record(path, local: l, cloud: c, hash: hash))
        }
    }

    /// Two folders that differ only in that `narrower` lacks some of the owner's write and
    /// search bits of `other`: the narrower mode wins. Nimbus never widens a mode the user
    /// narrowed (a read-only folder stays read-only), and a folder it was still filling when it
    /// stopped carries the bits it lends itself while it works in a read-only folder (it is
    /// recorded only once its exact mode is set, so it meets its twin here without a base).
    static func isNarrowerFolder(_ narrower: FileMetadata, than other: FileMetadata) -> Bool {
        let ownerBits: UInt32 = 0o300
        return narrower.kind == .directory && other.kind == .directory && narrower.mode != other.mode
            && narrower.mode | ownerBits == other.mode | ownerBits && narrower.mode & other.mode == narrower.mode
    }

    /// A real conflict: nothing is overwritten. The cloud version keeps the name (a directory
    /// always keeps it), the other is moved to a conflict name and synced as a new entry.
    mutating func keepBoth(_ path: RelativePath, local l: FileMetadata, cloud c: FileMetadata) {
        let loser: Side = l.kind == .directory ? .cloud : .local
        let loserEntry = loser == .local ? l : c
        let winnerEntry = loser == .local ? c : l
        let copyName = namer.name(for: path) { candidate in
            self.views[.local]![candidate] != nil || self.views[.cloud]![candidate] != nil
                || self.base[candidate] != nil
        }
        moves.append(.preserveConflict(path, as: copyName, on: loser, expected: loserEntry))
        views[loser]![copyName] = loserEntry
        views[loser]![path] = nil
        create(path, on: loser, from: winnerEntry, replacing: nil)
        create(copyName, on: loser.other, from: loserEntry, replacing: nil)
        plan.conflicts.append(Conflict(path: path, conflictCopy: copyName, nameKeptBy: loser.other, kinds: (l.kind, c.kind)))
    }
}
