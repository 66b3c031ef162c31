import NimbusVocabulary

/// The suffix style's fold: `NAME.nimbus` files become `NAME`.
struct SuffixFolder<Records: PlaceholderRecords> {
    let scope: [RelativePath]
    let base: [RelativePath: BaseEntry]
    let cloud: [RelativePath: FileMetadata]
    let records: Records
    let contents: [RelativePath: PlaceholderFileContents]
    let namer: ConflictNamer

    func inScope(_ path: RelativePath) -> Bool { scope.contains { $0.contains(path) } }

    /// The bytes of `file`; nil (and asked for) when not read yet, or not a small file.
    func bytes(_ file: RelativePath, _ fold: inout PlaceholderFold) -> PlaceholderFileContents? {
        guard let known = contents[file] else {
            fold.needsContents.insert(file)
            return nil
        }
        return known
    }

    /// Whether `file` holds a placeholder's text; nil when not known yet or unreadable.
    func isPlaceholderText(_ file: RelativePath, _ fold: inout PlaceholderFold) -> Bool?? {
        switch bytes(file, &fold) {
        case nil: return nil
        case .bytes(let b)?: return .some(Placeholder.parse(b) != nil)
        case .tooLarge?: return .some(false)
        case .unreadable?: return .some(nil)
        }
    }

    /// Whether `file` holds exactly the placeholder of `path` for `cloud` (`Placeholder.matches`);
    /// nil when not known yet.
    func holdsPlaceholder(_ file: RelativePath, of path: RelativePath, cloud: FileMetadata, _ fold: inout PlaceholderFold) -> Bool? {
        switch bytes(file, &fold) {
        case nil: return nil
        case .bytes(let b)?: return Placeholder.matches(b, for: path, cloud: cloud)
        default: return false
        }
    }

    /// Leaves `paths` out of this pass: a repair concerns them.
    func withhold(_ paths: RelativePath?..., from fold: inout PlaceholderFold) {
        for case let path? in paths { fold.withheld.insert(path) }
    }

    func fold(_ fold: inout PlaceholderFold) {
        restoreSuffixes(&fold)
        adoptDownloadedFiles(&fold)
        // Shorter names first: `x.nimbus` (the placeholder of `x`) is folded before
        // `x.nimbus.nimbus` (that of a cloud file named `x.nimbus`) looks for a real file there.
        let candidates = fold.local.filter { $0.value.kind == .file && Placeholder.target(of: $0.key) != nil && !fold.handled.contains($0.key) }
            .sorted { $0.key.bytes.count < $1.key.bytes.count }
        for (file, meta) in candidates { foldCandidate(file, meta, &fold) }
        // A placeholder renamed from a path left out of the pass is left out too: without
        // its base, the rename would look like a new file here.
        for (target, source) in fold.renamedFrom where fold.withheld.contains(source) {
            withhold(target, Placeholder.file(for: target), from: &fold)
        }
        for path in fold.withheld {
            fold.local[path] = nil
            fold.placeholders[path] = nil
            fold.strays[path] = nil
        }
    }

    /// A placeholder renamed to a name without `.nimbus` (found by its inode) gets the
    /// suffix back, so that it stays a placeholder for the file of its new name.
    func restoreSuffixes(_ fold: inout PlaceholderFold) {
        guard records.placeholderCount > 0 else { return }
        for (path, meta) in fold.local.sorted(by: { $0.key < $1.key }) {
            guard meta.kind == .file, Placeholder.target(of: path) == nil,
                  let record = records.path(ofInode: meta.inode, on: .local).flatMap({ records.placeholderRecord(at: $0) }),
                  record.isPlaceholder, meta.isUnchanged(from: record.base.local),
                  // Inodes are reused: the content must say placeholder too.
                  isPlaceholderText(path, &fold) == .some(true) else { continue }
            // When the name is another file's (in the cloud, in the journal) or `path.nimbus`
            // is taken (by another placeholder), a conflict name is used.
            var name = path
            let sameRenameThere = cloud[path]?.inode == record.base.cloud.inode
            if (cloud[path] != nil && !sameRenameThere) || base[path] != nil || records.placeholderRecord(at: path) != nil
                || fold.local[Placeholder.file(for: path) ?? path] != nil {
                name = namer.name(for: path) { taken($0, fold) }
            }
            guard let file = Placeholder.file(for: name), fold.local[file] == nil else { continue }
            fold.repairs.append(.movePlaceholder(from: path, to: file, expected: meta))
            fold.handled.formUnion([path, file])
            // Its record too: the rename is seen once the suffix is back, not a deletion now.
            withhold(path, file, records.path(ofInode: meta.inode, on: .local), from: &fold)
        }
    }

    /// A real file where the journal still records a placeholder, and no placeholder left: a
    /// download that put the file in place and removed the placeholder just before a crash,
    /// before the journal said so. Adopted (in sync when it holds the cloud's content), not
    /// taken for a change to upload.
    func adoptDownloadedFiles(_ fold: inout PlaceholderFold) {
        guard records.placeholderCount > 0 else { return }
        var localInodes: Set<UInt64>?
        for (path, meta) in fold.local.sorted(by: { $0.key < $1.key }) where meta.kind == .file && !fold.handled.contains(path) {
            guard let record = records.placeholderRecord(at: path), record.isPlaceholder, let file = Placeholder.file(for: path),
                  fold.local[file] == nil, !isPlaceholderOfAnother(path, meta) else { continue }
            // Its placeholder renamed elsewhere (by its inode): this is a new file, not a download.
            if localInodes == nil { localInodes = Set(fold.local.values.map(\.inode)) }
            if localInodes!.contains(record.base.local.inode) { continue }
            guard inScope(file) else {
                fold.needsWholeFolder = true  // Its placeholder may be there, out of sight.
                continue
            }
            // A download never holds a placeholder's text: that is a placeholder file left
            // behind (its record gone), folded by its name below.
            switch bytes(path, &fold) {
            case nil: continue
            case .bytes(let b)? where Placeholder.parse(b) != nil: continue
            default: break
            }
            fold.handled.insert(path)
            fold.repairs.append(.adoptLocalFile(path, local: meta, cloud: cloud[path]))
            withhold(path, from: &fold)
        }
    }

    /// Whether the file at `path` is a tracked placeholder file, by its inode (moved here, or
    /// `x.nimbus` being the placeholder of `x`): then it is no download of `path`'s own, even
    /// when `path` is a cloud file shown as a placeholder too.
    func isPlaceholderOfAnother(_ path: RelativePath, _ meta: FileMetadata) -> Bool {
        guard let owner = records.path(ofInode: meta.inode, on: .local), let record = records.placeholderRecord(at: owner) else { return false }
        return record.isPlaceholder && record.base.local.inode == meta.inode
    }

    /// Whether a name, or its placeholder's name, is known as anything's.
    func taken(_ path: RelativePath, _ fold: PlaceholderFold) -> Bool {
        func known(_ name: RelativePath) -> Bool {
            fold.local[name] != nil || cloud[name] != nil || base[name] != nil || records.placeholderRecord(at: name) != nil
        }
        return known(path) || Placeholder.file(for: path).map(known) ?? true
    }

    func foldCandidate(_ found: RelativePath, _ meta: FileMetadata, _ fold: inout PlaceholderFold) {
        let file = found
        let target = Placeholder.target(of: file)!
        let atTarget = records.placeholderRecord(at: target)
        // Another placeholder moved here (by its inode) comes first: even onto the name of a
        // tracked placeholder, or of a synced file, it is that other one.
        let movedFrom = records.path(ofInode: meta.inode, on: .local).flatMap { path -> (RelativePath, PlaceholderRecord)? in
            guard path != target, let moved = records.placeholderRecord(at: path), moved.isPlaceholder,
                  meta.isUnchanged(from: moved.base.local) else { return nil }
            return (path, moved)
        }
        // A synced file of its own that happens to end in .nimbus (not a placeholder's file),
        // unless the file there now is, by its inode, the placeholder of `target` or another's.
        let isTargetsPlaceholder = atTarget.map { $0.isPlaceholder && $0.base.local.inode == meta.inode } ?? false
        if let synced = records.placeholderRecord(at: file), !synced.isPlaceholder, !isTargetsPlaceholder, movedFrom == nil {
            // Changed into a placeholder's text (one copied over it): that text is never
            // uploaded. It is an untracked placeholder, and the file it replaced is gone
            // here (its cloud copy goes to the versions, as for any deletion).
            guard !meta.isUnchanged(from: synced.base.local), isPlaceholderText(file, &fold) == .some(true) else { return }
            if inScope(target) { foldUntracked(file, meta, target: target, &fold) } else { fold.needsWholeFolder = true }
            return
        }
        guard inScope(target) else {
            // What it stands for is outside the pass: neither can be judged from half the picture.
            fold.needsWholeFolder = true
            return
        }
        let record: PlaceholderRecord
        var recordPath = target
        if let atTarget, atTarget.isPlaceholder, movedFrom == nil {
            record = atTarget
        } else if let (movedFrom, moved) = movedFrom {
            // Renamed here: reconcile finds the rename by the inode.
            record = moved
            recordPath = movedFrom
            let cloudHasAnother = cloud[target].map { $0.inode != moved.base.cloud.inode } ?? false
            if atTarget != nil || fold.local[target] != nil || cloudHasAnother {
                // Onto the name of another file: it gets a conflict name of its own, and
                // both are looked at again once it has it.
                let newTarget = namer.name(for: target) { taken($0, fold) }
                if let newFile = Placeholder.file(for: newTarget) {
                    fold.repairs.append(.movePlaceholder(from: file, to: newFile, expected: meta))
                    withhold(newFile, newTarget, from: &fold)
                    fold.handled.insert(newFile)
                }
                withhold(file, movedFrom, from: &fold)
                return
            }
        } else if let atTarget, fold.local[target] == nil, atTarget.base.kind == .file,
                  cloud[target]?.isUnchanged(from: atTarget.base.cloud) == true {
            // Evicted, and stopped before the journal said so: the placeholder is ours if it
            // says exactly what ours would.
            switch holdsPlaceholder(file, of: target, cloud: atTarget.base.cloud, &fold) {
            case nil: return
            case true?:
                fold.repairs.append(.adoptPlaceholder(target, placeholder: meta, cloud: atTarget.base.cloud))
                withhold(file, target, from: &fold)
                return
            case false?:
                foldUntracked(file, meta, target: target, &fold)
                return
            }
        } else {
            foldUntracked(file, meta, target: target, &fold)
            return
        }
        fold.local[file] = nil
        if !meta.isUnchanged(from: record.base.local) {
            switch holdsPlaceholder(file, of: recordPath, cloud: record.base.cloud, &fold) {
            case nil: return
            case true?: break
            case false?:
                // Someone wrote into the placeholder: keep what they wrote under a name of
                // its own (uploaded as a new file) and put a fresh placeholder back.
                fold.repairs.append(.repairPlaceholder(recordPath, file: file, edited: meta, cloud: record.base.cloud))
                withhold(file, recordPath, target, from: &fold)
                return
            }
        }
        if let beside = fold.local[target], beside.kind == .file, !fold.handled.contains(target) {
            // A placeholder's text under the bare name (a stray renamed by hand) is no real
            // file: it goes, and this placeholder stands.
            switch isPlaceholderText(target, &fold) {
            case nil: return
            case .some(true?):
                fold.repairs.append(.retirePlaceholder(file: target, expected: beside))
                fold.handled.insert(target)
                fold.local[target] = nil
            default: break
            }
        }
        if fold.local[target] != nil {
            // A real file beside its placeholder (a download finished just before a crash,
            // or the user put it there): the real file wins.
            if record.isPlaceholder && recordPath == target {
                fold.repairs.append(.adoptLocalFile(target, local: fold.local[target]!, cloud: cloud[target]))
                withhold(target, from: &fold)
            }
            fold.repairs.append(.retirePlaceholder(file: file, expected: meta))
        } else {
            fold.local[target] = records.placeholderRecord(at: target)?.base.local ?? record.base.local
            fold.placeholders[target] = meta
            if recordPath != target { fold.renamedFrom[target] = recordPath }
        }
    }

    /// A `.nimbus` file the journal knows nothing of: a placeholder's text makes it a stray
    /// (adopted when its file is in the cloud, else it stands for nothing and goes); other
    /// text is a file of its own.
    func foldUntracked(_ file: RelativePath, _ meta: FileMetadata, target: RelativePath, _ fold: inout PlaceholderFold) {
        switch isPlaceholderText(file, &fold) {
        case nil:
            return
        case .some(true?):
            fold.local[file] = nil
            if fold.local[target] == nil && cloud[target] != nil {
                fold.strays[target] = meta
            } else {
                fold.repairs.append(.retirePlaceholder(file: file, expected: meta))
            }
        case .some(nil):
            fold.local[file] = nil  // Unreadable: neither a placeholder nor content yet.
            fold.unreadable.append(file)
        case .some(false?):
            break
        }
    }
}
