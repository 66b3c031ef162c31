import NimbusCore
import NimbusSystem
import NimbusVocabulary

extension SyncEngine {
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
        // Then the names, before the journal records them (it commits after the pass).
        for (side, error) in flush(sides.subtracting(failed.keys)) { log.error("cannot flush the \(side) folder: \(error)") }
    }
}
