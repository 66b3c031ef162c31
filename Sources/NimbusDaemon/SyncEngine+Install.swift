import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// Copies: prepared into a temporary file (or a staging folder), then installed at their
/// name, one by one or as a batch.
extension SyncEngine {
    /// A copy written to a temporary file, waiting for the batch's flush before it is installed.
    struct PendingInstall {
        var path: RelativePath
        var side: Side
        var prepared: PreparedCopy
        var replacing: FileMetadata?
        var source: FileMetadata
        /// Where a placeholder goes (`NAME.nimbus`); nil for a copy of `source` itself.
        var placeholder: RelativePath?
        /// The new folder whose staging folder holds the copy (`FolderStaging`); nil for a
        /// copy in a temporary file of its own.
        var stagedIn: RelativePath? = nil
    }

    /// With `staged`, the copy is made there, in the staging folder of `stagedIn` (a new folder).
    func copy(_ path: RelativePath, to side: Side, source: FileMetadata, replacing: FileMetadata?,
              staged: (path: RelativePath, in: RelativePath)? = nil, batch: inout [PendingInstall]?) throws {
        let request = CopyRequest(path: path, side: side, source: source, replacing: replacing, staged: staged)
        try beginCopy(request)
        let pending = request.pending(try prepare(request, durable: batch == nil))
        if batch != nil {
            batch!.append(pending)
        } else {
            try install(pending, durable: true)
        }
    }

    /// A copy of the plan, and where it is made: with `staged`, in the staging folder of
    /// `staged.in` (a new folder, `FolderStaging`).
    struct CopyRequest: Sendable {
        var path: RelativePath
        var side: Side
        var source: FileMetadata
        var replacing: FileMetadata?
        var staged: (path: RelativePath, in: RelativePath)?

        func pending(_ prepared: PreparedCopy) -> PendingInstall {
            PendingInstall(path: path, side: side, prepared: prepared, replacing: replacing, source: source, stagedIn: staged?.in)
        }
    }

    /// What comes before a copy's bytes, on the engine thread: the checks and its state.
    func beginCopy(_ request: CopyRequest) throws {
        if request.side == .local && request.replacing != nil { try ensureOwnUploadWasKept(request.path) }
        setTransient(request.path, request.side == .cloud ? .uploading(progress: 0) : .downloading(progress: 0))
    }

    /// Writes the copy's temporary (or staged) file. Safe on any thread (a batch's copies are
    /// prepared by `WorkerThreads`): it touches the filesystems, the heartbeat, the transient
    /// state and `leftoverCopiesPossible`, all safe to share (Mutex, atomic), and nothing that
    /// checks the owner (`checkOwner`).
    func prepare(_ request: CopyRequest, durable: Bool) throws -> PreparedCopy {
        let (path, side) = (request.path, request.side)
        let destination = system(side)
        let size = max(request.source.size, 1)
        do {
            let progress = { [weak self] (done: Int64) throws in
                try self?.stopIfRequested()
                self?.heartbeat()
                self?.setTransient(path, side == .cloud ? .uploading(progress: Double(done) / Double(size))
                                                        : .downloading(progress: Double(done) / Double(size)))
            }
            if let staged = request.staged {
                return try destination.prepareCopy(of: path, from: system(side.other), expected: request.source,
                                                   staged: staged.path, durable: durable, progress: progress)
            }
            return try destination.prepareCopy(of: path, from: system(side.other), expected: request.source,
                                               durable: durable, progress: progress)
        } catch {
            if side == .local { leftoverCopiesPossible.store(true, ordering: .relaxed) }
            throw error
        }
    }

    /// Returns the local file's metadata as the new base records it (nil for a placeholder):
    /// what `clearTransient` describes, without reading it again.
    @discardableResult
    func install(_ pending: PendingInstall, durable: Bool) throws -> FileMetadata? {
        if let file = pending.placeholder {
            try installPlaceholder(pending, at: file, durable: durable)
            return nil
        }
        let fs = system(pending.side)
        let displaced = pending.side == .cloud && pending.replacing != nil
            ? VersionStore(device: settings.deviceName).location(for: pending.path, at: clock.wallNow) : nil
        let installed: FileMetadata
        var hash: ContentHash?
        let fresh = isFresh(pending.source)
        do {
            // A fresh mtime may hide a same-size rewrite in the same tick, and a shared network
            // cloud is checked by content before each replace: keep the hash of exactly what was
            // copied (computed from the source during the copy where the destination asked for
            // it, else read from the temporary file, which nobody else touches).
            if fresh || verifiesCloudContent {
                hash = try pending.prepared.contentHash ?? fs.contentHash(of: pending.prepared.temporary, checkpoint: stopCheckpoint)
            }
            if pending.side == .local { try markTemporary(pending.prepared.temporary, durable: durable) }
            let expectedHash = pending.side == .cloud && pending.replacing != nil ? expectedCloudHash(pending.path) : nil
            installed = try fs.install(pending.prepared, at: pending.path, replacing: pending.replacing,
                                       expectedHash: expectedHash, displacedTo: displaced, durable: durable)
        } catch {
            fs.discard(pending.prepared)
            if pending.side == .local { leftoverCopiesPossible.store(true, ordering: .relaxed) }
            throw error
        }
        return recordInstalled(pending, installed: installed, hash: hash, displaced: displaced != nil)
    }

    /// The bookkeeping of a copy now at its name (installed, or published with its folder):
    /// the base with `installed` (what was written) and `hash`, the local file's mark, the
    /// counters. Returns the local file's metadata as the new base records it.
    func recordInstalled(_ pending: PendingInstall, installed: FileMetadata, hash: ContentHash?,
                         displaced: Bool) -> FileMetadata {
        let fresh = isFresh(pending.source)
        let base = pending.side == .cloud ? BaseEntry(local: pending.source, cloud: installed, hash: hash, isAmbiguous: fresh)
                                          : BaseEntry(local: installed, cloud: pending.source, hash: hash, isAmbiguous: fresh)
        updateRecord(pending.path, creating: base) {
            $0.base = base
            $0.isPlaceholder = false  // Real content on both sides now.
        }
        // Marked after the commit (`writePendingMarks`). A file new to the cloud is mostly
        // unmarked too; one that carries the mark already (a copy made with `cp -a`) gets it
        // written again, which is harmless.
        if pending.side == .cloud { state.withLock { $0.pendingMarks.append((pending.path, pending.replacing == nil)) } }
        noteInstalled(pending.path, on: pending.side, hash: hash, created: pending.replacing == nil)
        expectEchoes(of: [pending.path], on: pending.side)
        if displaced, let replaced = pending.replacing { noteVersionKept(size: replaced.size) }
        state.withLock {
            $0.status.filesCopied += 1
            $0.status.bytesCopied += pending.prepared.bytesCopied
        }
        return base.local
    }

    /// Installs a batch of prepared copies: one flush makes their content durable before any
    /// of them is renamed into place, another makes the renames durable. The staged folders
    /// (`FolderStaging`) are published between the two, one rename each, and their copies
    /// recorded; a folder that cannot be published has its copies installed one by one.
    func installBatch(_ batch: [PendingInstall], staging: FolderStaging, again: inout Set<RelativePath>) {
        var batch = batch
        var sides = Set(batch.map(\.side))
        if !staging.isEmpty { sides.insert(.cloud) }
        // Content first: no copy gets its name before its bytes are durable. A side whose
        // flush failed has its copies discarded and retried; the other side's go on.
        let failed = flush(sides)
        for (side, error) in failed { log.error("cannot flush the \(side) folder: \(error); its copies are retried") }
        var published: Set<RelativePath> = []
        if let error = failed[.cloud] {
            for folder in staging.folders where folder.path == folder.root { scheduleRetry(folder.path, error: "\(error)") }
        } else {
            published = publish(staging, batch: &batch, again: &again)
        }
        for pending in batch {
            if let error = failed[pending.side] {
                system(pending.side).discard(pending.prepared)
                scheduleRetry(pending.path, error: "\(error)")
                continue
            }
            do {
                let local = if let folder = pending.stagedIn, published.contains(folder) {
                    try recordPublished(pending)
                } else {
                    try install(pending, durable: false)
                }
                clearTransient(pending.path, local: local)
            } catch {
                let action: Action = pending.placeholder == nil
                    ? .copy(pending.path, to: pending.side, source: pending.source, replacing: pending.replacing)
                    : .writePlaceholder(pending.path, source: pending.source, replacing: pending.replacing)
                handle(error, for: action, again: &again)
            }
        }
        // What is left of the folders not published: empty once their copies are installed.
        removeStagingFolders(staging, except: published)
        // Then the names, before the journal records them (it commits after the pass): a side
        // whose flush fails stays to be flushed, and the commit waits for it.
        let installed = sides.subtracting(failed.keys)
        state.withLock { $0.changesAwaitFlush.formUnion(installed) }
        for (side, error) in flush(installed) { log.error("cannot flush the \(side) folder: \(error)") }
    }
}
