import NimbusCore
import NimbusSystem

/// Placeholders in the sync pass (DESIGN §5). The scan finds `NAME.nimbus` files; they are
/// folded into the local view as the file they stand for, unchanged since its base, so that
/// reconcile propagates their renames and deletions like any file's. `adaptForPlaceholders`
/// then keeps content from ever being read out of a placeholder.
extension SyncEngine {
    /// The paths to look at for `paths`: a placeholder's events concern the file it stands
    /// for, and a file's may concern its placeholder.
    func withPlaceholderNames(_ paths: Set<RelativePath>) -> Set<RelativePath> {
        var all = paths
        for path in paths {
            if let target = Placeholder.target(of: path) { all.insert(target) } else if let file = Placeholder.file(for: path) { all.insert(file) }
        }
        return all
    }

    /// Replaces placeholder files in `views.local` by the files they stand for.
    func foldPlaceholders(_ views: inout Views) {
        restoreSuffixes(&views)
        adoptDownloadedFiles(&views)
        // Shorter names first: `x.nimbus` (the placeholder of `x`) is folded before
        // `x.nimbus.nimbus` (that of a cloud file named `x.nimbus`) looks for a real file there.
        let candidates = views.local.filter { $0.value.kind == .file && Placeholder.target(of: $0.key) != nil }
            .sorted { $0.key.bytes.count < $1.key.bytes.count }
        guard !candidates.isEmpty else { return }
        for (found, meta) in candidates {
            var file = found
            var target = Placeholder.target(of: file)!
            let (atTarget, synced, byInode) = state.withLock { s -> (PathRecord?, PathRecord?, (RelativePath, PathRecord)?) in
                let moved = s.index.path(ofInode: meta.inode, on: .local).flatMap { path in s.index[path].map { (path, $0) } }
                return (s.index[target], s.index[file], moved)
            }
            // A synced file of its own that happens to end in .nimbus (not a placeholder's file).
            if let synced, !synced.isPlaceholder { continue }
            let record: PathRecord
            var recordPath = target
            if let atTarget, atTarget.isPlaceholder {
                record = atTarget
            } else if let (movedFrom, moved) = byInode, moved.isPlaceholder, meta.isUnchanged(from: moved.base.local) {
                // Renamed here: reconcile finds the rename by the inode.
                record = moved
                recordPath = movedFrom
                if atTarget != nil || views.local[target] != nil {
                    // Onto the name of another file: it gets a conflict name of its own.
                    views.local[file] = nil
                    guard let renamed = moveAside(file, meta, target: target, views: views) else {
                        views.local[movedFrom] = moved.base.local  // Not a deletion: look again later.
                        continue
                    }
                    (file, target) = renamed
                }
            } else if let atTarget, views.local[target] == nil, atTarget.base.kind == .file,
                      views.cloud[target]?.isUnchanged(from: atTarget.base.cloud) == true,
                      (try? local.readFile(file, limit: Placeholder.maximumSize)) == Placeholder.contents(for: target, cloud: atTarget.base.cloud) {
                // Evicted, and stopped before the journal said so: the placeholder is ours.
                var adopted = atTarget
                adopted.base = BaseEntry(local: meta, cloud: atTarget.base.cloud)
                adopted.isPlaceholder = true
                setRecord(target, adopted)
                views.base[target] = adopted.base
                record = adopted
            } else {
                switch isPlaceholderFile(file) {
                case true?:
                    views.local[file] = nil
                    // Adopted when its file is in the cloud; else it stands for nothing and goes.
                    if views.local[target] == nil && views.cloud[target] != nil { views.strays[target] = meta } else { views.leftovers[file] = meta }
                case nil:
                    views.local[file] = nil  // Unreadable: neither a placeholder nor content yet.
                    scheduleRetry(file, error: "unreadable")
                case false?:
                    break
                }
                continue
            }
            views.local[file] = nil
            var placeholder = meta
            if !meta.isUnchanged(from: record.base.local),
               (try? local.readFile(file, limit: Placeholder.maximumSize)) != Placeholder.contents(for: recordPath, cloud: record.base.cloud) {
                // Someone wrote into the placeholder: keep what they wrote under a name of
                // its own (uploaded as a new file) and put a fresh placeholder back.
                guard let fresh = rescueEditedPlaceholder(file, meta, target: target, record: record, views: &views) else {
                    views.local[target] = record.base.local  // Not a deletion: look again later.
                    continue
                }
                placeholder = fresh
            }
            if views.local[target] != nil {
                // A real file beside its placeholder (a download finished just before a
                // crash, or the user put it there): the real file wins.
                views.leftovers[file] = meta
                if record.isPlaceholder && recordPath == target { adoptRealFile(target, &views) }
            } else {
                views.local[target] = state.withLock { $0.index[target]?.base.local } ?? record.base.local
                views.placeholders[target] = placeholder
            }
        }
    }

    /// The real file now beside a placeholder replaces it in the record. When it holds the
    /// cloud's content (a download that completed just before a crash) it is simply in sync;
    /// otherwise it is a change made here, and reconcile treats it as one.
    func adoptRealFile(_ path: RelativePath, _ views: inout Views) {
        guard let here = views.local[path] else { return }
        var base: BaseEntry?
        if let there = views.cloud[path], here.kind == .file, there.kind == .file, here.size == there.size,
           let localHash = try? local.contentHash(of: path), let cloudHash = try? cloud.contentHash(of: path), localHash == cloudHash {
            base = BaseEntry(local: here, cloud: there, hash: localHash, isAmbiguous: isFresh(here))
            log.info("\(path) is complete beside its placeholder: it is in sync, the placeholder goes")
        }
        updateRecord(path) { record in
            record.isPlaceholder = false
            if let base { record.base = base }
        }
        if let base { views.base[path] = base }
    }

    /// A real file where the journal still records a placeholder, and no placeholder left: a
    /// download that put the file in place and removed the placeholder just before a crash,
    /// before the journal said so. Adopted (in sync when it holds the cloud's content), not
    /// taken for a change to upload.
    func adoptDownloadedFiles(_ views: inout Views) {
        let downloaded = state.withLock { s -> [RelativePath] in
            guard s.index.placeholders > 0 else { return [] }
            return views.local.compactMap { path, meta in
                guard meta.kind == .file, s.index[path]?.isPlaceholder == true,
                      let file = Placeholder.file(for: path), views.local[file] == nil else { return nil }
                return path
            }
        }
        for path in downloaded { adoptRealFile(path, &views) }
    }

    /// In a pass over some paths only, a placeholder that is gone may have been renamed to a
    /// name outside them (its events not read yet). Unlike a file, a placeholder cannot be
    /// uploaded again from its new name, so the whole folder is looked at before concluding
    /// that it was deleted.
    func missesPlaceholders(_ views: Views) -> Bool {
        state.withLock { s in
            views.base.keys.contains { path in views.local[path] == nil && s.index[path]?.isPlaceholder == true }
        }
    }

    /// A placeholder renamed to a name without `.nimbus` (found by its inode) gets the suffix
    /// back, so that it stays a placeholder for the file of its new name.
    func restoreSuffixes(_ views: inout Views) {
        let renamed = state.withLock { s in
            views.local.filter { path, meta in
                guard meta.kind == .file, Placeholder.target(of: path) == nil,
                      let record = s.index.path(ofInode: meta.inode, on: .local).flatMap({ s.index[$0] }) else { return false }
                return record.isPlaceholder && meta.isUnchanged(from: record.base.local)
            }
        }
        // Inodes are reused: the content must say placeholder too.
        for (path, meta) in renamed where isPlaceholderFile(path) == true {
            // When `path.nimbus` is taken (by another placeholder), a conflict name is used.
            var name = path
            if views.local[Placeholder.file(for: path) ?? path] != nil {
                name = namer.name(for: path) { views.local[$0] != nil || views.local[Placeholder.file(for: $0) ?? $0] != nil }
            }
            guard let file = Placeholder.file(for: name), views.local[file] == nil else { continue }
            do {
                try expect(path, on: .local, meta)
                try local.rename(path, to: file, replacing: false)
                views.local[path] = nil
                views.local[file] = meta
                log.info("\(path) is a placeholder: renamed to \(file)")
            } catch {
                log.debug("cannot rename the placeholder \(path) to \(file): \(error)")
            }
        }
    }

    /// Whether `file` holds a placeholder's text; nil when it cannot be read now.
    func isPlaceholderFile(_ file: RelativePath) -> Bool? {
        do {
            return Placeholder.parse(try local.readFile(file, limit: Placeholder.maximumSize)) != nil
        } catch let error as SystemError where error.errno == .fileTooLarge {
            return false
        } catch {
            return nil
        }
    }

    /// Whether a cloud file at `path` is downloaded rather than shown as a placeholder: in
    /// mirror mode unless evicted; in on-demand mode only when it or a folder above it is pinned.
    func keepsLocalCopy(_ path: RelativePath) -> Bool {
        if let record = state.withLock({ $0.index[path] }) {
            if record.residency == .pinned { return true }
            if record.residency == .evicted { return false }
        }
        return !settings.onDemand || isPinnedByFolder(path)
    }

    /// Whether a folder above `path` is pinned.
    func isPinnedByFolder(_ path: RelativePath) -> Bool {
        state.withLock { s in
            var folder = path.parent
            while !folder.isRoot {
                if s.index[folder]?.residency == .pinned { return true }
                folder = folder.parent
            }
            return false
        }
    }

    func adapt(_ plan: Plan, _ views: Views) -> Plan {
        adaptForPlaceholders(plan, placeholders: views.placeholders, strays: views.strays) { path in
            // A file of someone's holds the placeholder's name: the file itself comes instead.
            keepsLocalCopy(path) || Placeholder.file(for: path).map { views.local[$0] != nil } ?? true
        }
    }
}
