import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// Writing, moving and removing placeholder files (DESIGN §5). A placeholder someone wrote
/// into is their content now: it is kept under a conflict name, never deleted.
extension SyncEngine {
    func writePlaceholder(_ path: RelativePath, source: FileMetadata, replacing: FileMetadata?,
                          batch: inout [PendingInstall]?) throws {
        guard let file = Placeholder.file(for: path) else { throw PlaceholderNameTooLong(path: path) }
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
        guard let source = Placeholder.file(for: from) else { return }
        guard let destination = Placeholder.file(for: to) else {
            // Renamed in the cloud to a name that leaves no room for ".nimbus": the old
            // placeholder stands for nothing now, and the new name is an error until renamed.
            try removePlaceholder(from, expected: expected)
            throw PlaceholderNameTooLong(path: to)
        }
        try expect(source, on: .local, expected)
        try local.rename(source, to: destination, replacing: false)
        rekey(from: from, to: to)
        emit(.renamed(from: from, to: to, on: .local))
    }

    /// Removes a placeholder file that is no longer needed; one that someone wrote into is
    /// not a placeholder any more and is kept under a conflict name instead.
    func retirePlaceholder(_ file: RelativePath, expected: FileMetadata) throws {
        try expect(file, on: .local, expected)
        if let record = state.withLock({ $0.index[file] }), record.isPlaceholder, placeholderFile(for: file) != file,
           expected.isUnchanged(from: record.base.local) || isGuarded(expected, as: record.base.local) {
            // The sparse file of a real-name placeholder, in the suffix style now: no text to read.
            try removeUnchanged(file, expected: expected)
            marker?.forget(expected)
            setRecord(file, nil)
            emit(.removed(file, on: .local))
            log.info("removed the placeholder \(file): its file is gone from the cloud")
            return
        }
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

    /// Someone wrote into `file`, the placeholder of `path`: what they wrote moves aside to a
    /// conflict name and a new placeholder takes its place, in one step (`install` with
    /// `displacedTo`), so the name never stands empty.
    func repairPlaceholder(_ path: RelativePath, file: RelativePath, edited: FileMetadata, cloud cloudFile: FileMetadata) throws {
        try expect(file, on: .local, edited)
        let target = Placeholder.target(of: file) ?? path
        let keptAs = namer.name(for: target, taken: existsOnEitherSide)
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
        updateRecord(path) { $0.base.local = installed }
        log.notice("\(file) was written to, so it is no longer a placeholder: what was written is kept as \(keptAs), "
                   + "and a new placeholder stands for \(target)")
    }

    /// Renames a placeholder file (its suffix restored, or off a name another file holds).
    func movePlaceholder(from: RelativePath, to: RelativePath, expected: FileMetadata) throws {
        try expect(from, on: .local, expected)
        try local.rename(from, to: to, replacing: false)
        log.notice("\(from) is a placeholder: renamed to \(to)")
    }

    /// Journals a placeholder found in place of a file the journal still has (an eviction
    /// stopped before the journal said so).
    func adoptPlaceholder(_ path: RelativePath, file: RelativePath, placeholder: FileMetadata, cloud cloudFile: FileMetadata) throws {
        try expect(file, on: .local, placeholder)
        try expect(path, on: .cloud, cloudFile)
        updateRecord(path) { record in
            record.base = BaseEntry(local: placeholder, cloud: cloudFile)
            record.isPlaceholder = true
        }
        log.info("\(file) is the placeholder of \(path) (an eviction was interrupted)")
    }

    /// The real file at `path` replaces its placeholder in the record. When it holds the
    /// cloud's content (a download that completed just before a crash) it is simply in sync;
    /// otherwise it is a change made here, and reconcile treats it as one.
    func adoptLocalFile(_ path: RelativePath, local here: FileMetadata, cloud there: FileMetadata?) throws {
        try expect(path, on: .local, here)
        try expect(path, on: .cloud, there)
        var base: BaseEntry?
        if let there, here.kind == .file, there.kind == .file, here.size == there.size,
           let localHash = try? local.contentHash(of: path), let cloudHash = try? cloud.contentHash(of: path), localHash == cloudHash {
            base = BaseEntry(local: here, cloud: there, hash: localHash, isAmbiguous: isFresh(here))
            log.info("\(path) is complete in place of its placeholder: it is in sync")
        }
        updateRecord(path) { record in
            record.isPlaceholder = false
            if let base { record.base = base }
        }
    }

    /// Evicts the downloaded file `path` (still `here`, in sync with the cloud's `there`): its
    /// placeholder is written beside it, journaled, and only then is the file removed.
    func evictToPlaceholder(_ path: RelativePath, expected here: FileMetadata, cloud there: FileMetadata) throws {
        guard let file = Placeholder.file(for: path), let record = state.withLock({ $0.index[path] }) else { return }
        do { try expect(path, on: .local, here) } catch is ChangedSincePlanned {
            throw EngineRequestError(kind: .notInSync, message: "\(path) changed while it was evicted; it is kept")
        }
        // The placeholder first: a crash in between leaves both, and the real file wins.
        let prepared = try local.prepareFile(near: file, contents: Placeholder.contents(for: path, cloud: there), mode: 0o644,
                                             mtime: there.mtime, attributes: Placeholder.attributes(cloud: there), durable: true)
        let placeholder: FileMetadata
        do { placeholder = try local.install(prepared, at: file, replacing: nil, displacedTo: nil, durable: true) } catch {
            local.discard(prepared)
            throw error
        }
        // Journaled before the file goes: a crash in between leaves the file beside its
        // placeholder, which the next start adopts again (never a deletion).
        updateRecord(path) { record in
            record.base = BaseEntry(local: placeholder, cloud: there)
            record.isPlaceholder = true
            // Kept a placeholder until asked for again, also in mirror mode.
            record.residency = .evicted
        }
        commit()
        do {
            try removeUnchanged(path, expected: record.base.local)
        } catch {
            setRecord(path, record)
            try? local.removeFile(file)
            commit()
            throw error
        }
    }

    func installPlaceholder(_ pending: PendingInstall, at file: RelativePath, durable: Bool) throws {
        let installed: FileMetadata
        do {
            installed = try local.install(pending.prepared, at: file, replacing: pending.replacing, displacedTo: nil, durable: durable)
        } catch {
            local.discard(pending.prepared)
            leftoverCopiesPossible.store(true, ordering: .relaxed)
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
        guard let file = isPlaceholder ? placeholderFile(for: path) : path else { return }
        markState(now, of: file)
    }
}

/// A cloud file that would be a suffix placeholder here, but whose name leaves no room for
/// ".nimbus" (255 bytes at most): nothing can stand for it in the local folder. It is not
/// downloaded behind the user's back (in on-demand mode that is what they chose to avoid,
/// and it may be large): the path is an error, in status and `ls --state error`, until it is
/// renamed, downloaded on request, or its folder pinned. (A real-name placeholder of such a
/// name, found by a switch to this style, is downloaded instead: it was there under its
/// name already, and its sparse file cannot stay.)
struct PlaceholderNameTooLong: Error, CustomStringConvertible {
    let path: RelativePath

    var description: String {
        "\(path) is in the cloud folder but not here: its name is \(path.name.count) bytes, and its placeholder's name, "
            + "with \".nimbus\" after it, would pass the 255 bytes a name may have. Download it ("
            + "nimbusctl download " + ShellWord.quote(bytes: path.bytes) + "), or give it a shorter name in the cloud folder"
    }
}
