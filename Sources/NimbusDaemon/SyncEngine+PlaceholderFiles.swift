import NimbusCore
import NimbusSystem

/// Writing, moving and removing placeholder files (DESIGN §5). A placeholder someone wrote
/// into is their content now: it is kept under a conflict name, never deleted.
extension SyncEngine {
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
        emit(.removed(path, on: .local))
    }

    func renamePlaceholder(from: RelativePath, to: RelativePath, expected: FileMetadata) throws {
        guard let source = Placeholder.file(for: from), let destination = Placeholder.file(for: to) else { return }
        try expect(source, on: .local, expected)
        try local.rename(source, to: destination, replacing: false)
        rekey(from: from, to: to)
        emit(.renamed(from: from, to: to, on: .local))
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
        case true?:
            try local.removeFile(file)
            log.info("removed the placeholder \(file): \(Placeholder.target(of: file).map { "\($0)" } ?? "its file") is there, or gone from the cloud")
            return
        case nil: throw ChangedSincePlanned(path: file, side: .local)
        case false?: break
        }
        let target = Placeholder.target(of: file) ?? file
        let keptAs = namer.name(for: target, taken: existsOnEitherSide)
        try local.rename(file, to: keptAs, replacing: false)
        log.notice("\(file) was written to, so it is no longer a placeholder: what was written is kept as \(keptAs)")
    }

    /// Moves an edited placeholder aside to a conflict name and installs a new placeholder in
    /// one step (`install` with `displacedTo`); returns the new placeholder's metadata.
    func rescueEditedPlaceholder(_ file: RelativePath, _ edited: FileMetadata, target: RelativePath, record: PathRecord,
                                 views: inout Views) -> FileMetadata? {
        let keptAs = namer.name(for: target, taken: existsOnEitherSide)
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

    /// Renames the placeholder `file` (standing for `target`, a name taken by another file)
    /// to the placeholder of a conflict name; returns the new placeholder and target.
    func moveAside(_ file: RelativePath, _ meta: FileMetadata, target: RelativePath,
                   views: Views) -> (file: RelativePath, target: RelativePath)? {
        let newTarget = namer.name(for: target) {
            views.local[$0] != nil || views.local[Placeholder.file(for: $0) ?? $0] != nil || existsOnEitherSide($0)
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
        } catch let error as SystemError where error.errno == .notSupported && !path.isRoot && rootKeepsAttributes() {
            // One entry that keeps none (a file just replaced by a symlink, as `tar x` does):
            // that entry's problem, not the filesystem's.
            log.debug("cannot write \(Placeholder.stateAttribute) of \(path): \(error)")
        } catch let error as SystemError where error.errno == .notSupported {
            attributesSupported.store(false, ordering: .relaxed)
            log.notice("the local folder's filesystem keeps no user xattrs (\(error)); file states are not written to user.nimbus.state")
        } catch {
            log.debug("cannot write \(Placeholder.stateAttribute) of \(path): \(error)")
        }
    }

    /// Whether the local root, a directory, can hold user xattrs: reading one there fails
    /// with `EOPNOTSUPP` only on a filesystem that keeps none.
    private func rootKeepsAttributes() -> Bool {
        do {
            _ = try local.extendedAttribute(Placeholder.stateAttribute, of: .root)
            return true
        } catch let error as SystemError where error.errno == .notSupported {
            return false
        } catch {
            return true  // Another failure says nothing about the filesystem.
        }
    }
}
