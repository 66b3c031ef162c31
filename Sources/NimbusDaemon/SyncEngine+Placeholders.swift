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
        let candidates = views.local.filter { $0.value.kind == .file && Placeholder.target(of: $0.key) != nil }
        guard !candidates.isEmpty else { return }
        for (found, meta) in candidates {
            var file = found
            var target = Placeholder.target(of: file)!
            let (atTarget, tracked, byInode) = state.withLock { s -> (PathRecord?, Bool, (RelativePath, PathRecord)?) in
                let moved = s.index.path(ofInode: meta.inode, on: .local).flatMap { path in s.index[path].map { (path, $0) } }
                return (s.index[target], s.index[file] != nil, moved)
            }
            if tracked { continue }  // A file of the user's that happens to end in .nimbus.
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
            } else {
                views.local[target] = state.withLock { $0.index[target]?.base.local } ?? record.base.local
                views.placeholders[target] = placeholder
            }
        }
    }

    /// Moves an edited placeholder aside to a conflict name and installs a new placeholder in
    /// one step (`install` with `displacedTo`); returns the new placeholder's metadata.
    func rescueEditedPlaceholder(_ file: RelativePath, _ edited: FileMetadata, target: RelativePath, record: PathRecord,
                                 views: inout Views) -> FileMetadata? {
        let s = settings
        let namer = ConflictNamer(device: s.deviceName, wallTime: clock.wallNow, utcOffsetSeconds: s.utcOffsetSeconds)
        let keptAs = namer.name(for: target) { path in
            (try? local.metadata(of: path)) != nil || (try? cloud.metadata(of: path)) != nil
        }
        let cloudFile = record.base.cloud
        do {
            let prepared = try local.prepareFile(near: file, contents: Placeholder.contents(for: target, cloud: cloudFile), mode: 0o644,
                                                 mtime: cloudFile.mtime, attributes: Placeholder.attributes(cloud: cloudFile),
                                                 durable: true)
            let installed: FileMetadata
            do {
                installed = try local.install(prepared, at: file, replacing: edited, displacedTo: keptAs, durable: true)
            } catch {
                local.discard(prepared)
                throw error
            }
            updateRecord(target) { $0.base.local = installed }
            if let moved = try local.metadata(of: keptAs) { views.local[keptAs] = moved }
            log.notice("\(file) was written to, so it is no longer a placeholder: what was written is kept as \(keptAs), "
                       + "and a new placeholder stands for \(target)")
            return installed
        } catch {
            log.warning("\(file) was written to and could not be moved aside: \(error); it is looked at again")
            scheduleRetry(file, error: "\(error)")
            return nil
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
                let s = settings
                name = ConflictNamer(device: s.deviceName, wallTime: clock.wallNow, utcOffsetSeconds: s.utcOffsetSeconds).name(for: path) {
                    views.local[$0] != nil || views.local[Placeholder.file(for: $0) ?? $0] != nil
                }
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

    /// Renames the placeholder `file` (standing for `target`, a name taken by another file)
    /// to the placeholder of a conflict name; returns the new placeholder and target.
    func moveAside(_ file: RelativePath, _ meta: FileMetadata, target: RelativePath,
                   views: Views) -> (file: RelativePath, target: RelativePath)? {
        let s = settings
        let newTarget = ConflictNamer(device: s.deviceName, wallTime: clock.wallNow, utcOffsetSeconds: s.utcOffsetSeconds).name(for: target) {
            views.local[$0] != nil || views.local[Placeholder.file(for: $0) ?? $0] != nil || (try? self.local.metadata(of: $0)) != nil
        }
        guard let newFile = Placeholder.file(for: newTarget) else { return nil }
        do {
            try expect(file, on: .local, meta)
            try local.rename(file, to: newFile, replacing: false)
            log.notice("\(file) was moved onto the name of another file: it is now \(newFile)")
            return (newFile, newTarget)
        } catch {
            log.warning("cannot rename the placeholder \(file) to \(newFile): \(error); it is looked at again")
            scheduleRetry(file, error: "\(error)")
            return nil
        }
    }

    /// Whether a cloud file at `path` is downloaded rather than shown as a placeholder: in
    /// mirror mode unless evicted; in on-demand mode only when it or a folder above it is pinned.
    func keepsLocalCopy(_ path: RelativePath) -> Bool {
        let onDemand = settings.onDemand
        return state.withLock { s in
            if let record = s.index[path] {
                if record.residency == .pinned { return true }
                if record.residency == .evicted { return false }
            }
            guard onDemand else { return true }
            var folder = path.parent
            while !folder.isRoot {
                if s.index[folder]?.residency == .pinned { return true }
                folder = folder.parent
            }
            return false
        }
    }

    func adapt(_ plan: Plan, _ views: Views) -> Plan {
        adaptForPlaceholders(plan, placeholders: views.placeholders, strays: views.strays, keepsLocalCopy: keepsLocalCopy)
    }

    /// Placeholders made pointless by a real file beside them, or standing for nothing.
    func removeLeftovers(_ views: Views) {
        for (file, meta) in views.leftovers {
            do {
                try retirePlaceholder(file, expected: meta)
            } catch {
                log.debug("left \(file) alone: \(error)")
            }
        }
    }

    /// Removes a placeholder file that is no longer needed; one that someone wrote into is
    /// not a placeholder any more and is kept under a conflict name instead.
    func retirePlaceholder(_ file: RelativePath, expected: FileMetadata) throws {
        try expect(file, on: .local, expected)
        switch isPlaceholderFile(file) {
        case true?: return try local.removeFile(file)
        case nil: throw ChangedSincePlanned(path: file, side: .local)
        case false?: break
        }
        let target = Placeholder.target(of: file) ?? file
        let s = settings
        let keptAs = ConflictNamer(device: s.deviceName, wallTime: clock.wallNow, utcOffsetSeconds: s.utcOffsetSeconds)
            .name(for: target) { path in (try? local.metadata(of: path)) != nil || (try? cloud.metadata(of: path)) != nil }
        try local.rename(file, to: keptAs, replacing: false)
        log.notice("\(file) was written to, so it is no longer a placeholder: what was written is kept as \(keptAs)")
    }

    // MARK: - Executing

    func writePlaceholder(_ path: RelativePath, source: FileMetadata, replacing: FileMetadata?,
                          batch: inout [PendingInstall]?) throws {
        guard let file = Placeholder.file(for: path) else {
            // The name plus ".nimbus" would be too long: download the file instead.
            return try copy(path, to: .local, source: source, replacing: nil, batch: &batch)
        }
        try expect(path, on: .cloud, source)
        try expect(file, on: .local, replacing)
        let prepared = try local.prepareFile(near: file, contents: Placeholder.contents(for: path, cloud: source), mode: 0o644,
                                             mtime: source.mtime, attributes: Placeholder.attributes(cloud: source),
                                             durable: batch == nil)
        let pending = PendingInstall(path: path, side: .local, prepared: prepared, replacing: replacing, source: source,
                                     placeholder: file)
        if batch != nil { batch!.append(pending) } else { try install(pending, durable: true) }
    }

    func removePlaceholder(_ path: RelativePath, expected: FileMetadata) throws {
        guard let file = Placeholder.file(for: path) else { return }
        try expect(file, on: .local, expected)
        try local.removeFile(file)
        if state.withLock({ $0.index[path]?.isPlaceholder }) == true { setRecord(path, nil) }
    }

    func renamePlaceholder(from: RelativePath, to: RelativePath, expected: FileMetadata) throws {
        guard let source = Placeholder.file(for: from), let destination = Placeholder.file(for: to) else { return }
        try expect(source, on: .local, expected)
        try local.rename(source, to: destination, replacing: false)
        rekey(from: from, to: to)
    }
}

extension SyncEngine {
    func installPlaceholder(_ pending: PendingInstall, at file: RelativePath, durable: Bool) throws {
        let installed: FileMetadata
        do {
            installed = try local.install(pending.prepared, at: file, replacing: pending.replacing, displacedTo: nil, durable: durable)
        } catch {
            local.discard(pending.prepared)
            throw error
        }
        let base = BaseEntry(local: installed, cloud: pending.source)
        updateRecord(pending.path, creating: base) { record in
            record.base = base
            record.isPlaceholder = true
        }
        emit(.stateChanged(pending.path, .notDownloaded))
    }

    /// Writes the current state of `path` to the xattr of its file or placeholder.
    func publishState(of path: RelativePath) {
        guard let now = entry(path)?.state else { return }
        let isPlaceholder = state.withLock { $0.index[path]?.isPlaceholder == true }
        guard let file = isPlaceholder ? Placeholder.file(for: path) : path else { return }
        markState(now, of: file)
    }

    /// Writes `state` to the `user.nimbus.state` xattr of a local file, for scripts and file
    /// managers (DESIGN §2). Best effort: a filesystem without user xattrs is remembered and
    /// not asked again.
    func markState(_ fileState: FileState, of path: RelativePath) {
        guard attributesSupported.load(ordering: .relaxed) else { return }
        let value = Array(fileState.name.utf8)
        do {
            if try local.extendedAttribute(Placeholder.stateAttribute, of: path) == value { return }
            try local.setExtendedAttribute(Placeholder.stateAttribute, of: path, to: value)
        } catch let error as SystemError where error.errno == .noSuchFile {
            return  // Not here (yet): a download in progress, a file just deleted.
        } catch let error as SystemError where error.errno == .notSupported {
            attributesSupported.store(false, ordering: .relaxed)
            log.notice("the local folder's filesystem keeps no user xattrs; file states are not written to user.nimbus.state")
        } catch {
            log.debug("cannot write \(Placeholder.stateAttribute) of \(path): \(error)")
        }
    }
}
