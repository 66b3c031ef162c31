import NimbusCore
import NimbusSystem
import NimbusVocabulary

// A folder new in the cloud is uploaded as a unit (issue 15). Renaming each copy into place
// cost a rename per file, where `cp -a` creates each file under its final name: a folder the
// plan makes in the cloud with only new folders and new files beneath it
// (`Plan.stagedFolders`) is built in a staging folder in `.nimbus/tmp/<device>/`, named like
// a temporary file (so every sweep and ignore rule covers it), its files created there under
// their final names, and published after the batch's content flush with one rename that
// never replaces anything. Where that rename cannot be made (another device made the folder
// meanwhile, or the filesystem refuses `RENAME_NOREPLACE`), the staged files are installed
// one by one into the real folder, as any other copy, and the staging folder removed.
//
// A crash at any point leaves at most a staging folder, which the next start removes; the
// local files are untouched, so the next pass uploads them again.
//
// A copy that fails while the folder is staged (its source changed, the disk is full) is
// retried on its own, as any failed copy, and the folder is still published with the copies
// that succeeded: each of them is complete and flushed before the publish, exactly what a
// per-file install would have put in place by then, and a retry of the missing files goes
// into the published folder as usual. Removing the whole staging folder instead would throw
// away finished uploads and free no more space than the retry needs. Only a failed flush
// holds everything back: then no staged byte is known durable, so nothing is published, the
// staged files are discarded and the staging folder removed.

/// The staged folders of one plan's execution, and the folders made in them.
struct FolderStaging {
    /// The folders the plan lets be staged (`Plan.stagedFolders(on: .cloud)`).
    let candidates: Set<RelativePath>
    /// Each staged folder's staging folder, once made.
    private(set) var roots: [RelativePath: RelativePath] = [:]
    /// Every folder made in a staging folder (each staged folder first, then those beneath
    /// it, parents first), with its staged folder and what it was made from.
    private(set) var folders: [(path: RelativePath, root: RelativePath, source: FileMetadata)] = []

    init(_ candidates: Set<RelativePath>) { self.candidates = candidates }

    var isEmpty: Bool { roots.isEmpty }

    /// Where `path` is built, and in which staged folder; nil when it is not beneath one.
    func staged(_ path: RelativePath) -> (path: RelativePath, in: RelativePath)? {
        guard !roots.isEmpty else { return nil }
        var folder = path.parent
        while !folder.isRoot {
            if let staging = roots[folder], let inside = folder.relative(path) { return (staging.appending(inside), folder) }
            folder = folder.parent
        }
        return nil
    }

    mutating func made(_ path: RelativePath, in root: RelativePath, source: FileMetadata, staging: RelativePath? = nil) {
        if let staging { roots[path] = staging }
        folders.append((path, root, source))
    }
}

extension SyncEngine {
    /// Performs `action` in a staging folder when it belongs there: the `.makeDirectory` of a
    /// staged folder (its staging folder is made) or of a folder beneath one, a new file's
    /// `.copy` beneath one. False when the action is not staged (performed as usual).
    func stage(_ action: Action, in staging: inout FolderStaging, batch: inout [PendingInstall]?) throws -> Bool {
        switch action {
        case .makeDirectory(let path, .cloud, let source) where staging.candidates.contains(path):
            try makeDirectories(cloudTemporaryDirectory, in: cloud)
            let folder = try cloudTemporaryDirectory.appending(name: TemporaryName.unique())
            // Writable while it is filled and published (a folder moved to another parent
            // must be writable); its exact mode is set right after the publish.
            _ = try makeFolder(path, on: .cloud, at: folder, source: source)
            staging.made(path, in: path, source: source, staging: folder)
        case .makeDirectory(let path, .cloud, let source):
            guard let staged = staging.staged(path) else { return false }
            _ = try makeFolder(path, on: .cloud, at: staged.path, source: source)
            staging.made(path, in: staged.in, source: source)
        case .copy(let path, .cloud, let source, nil):
            guard let staged = staging.staged(path) else { return false }
            try copy(path, to: .cloud, source: source, replacing: nil, staged: staged, batch: &batch)
        default:
            return false
        }
        return true
    }

    /// Publishes each staged folder: its copies' hashes read where `install` reads them (from
    /// files nobody else can reach yet), then one rename, then the folders' records (files are
    /// recorded by the caller, `recordPublished`). Returns the staged folders published.
    func publish(_ staging: FolderStaging, batch: inout [PendingInstall], again: inout Set<RelativePath>) -> Set<RelativePath> {
        var published: Set<RelativePath> = []
        var copies: [RelativePath: [Int]] = [:]
        for index in batch.indices { if let folder = batch[index].stagedIn { copies[folder, default: []].append(index) } }
        for (folder, staged) in staging.roots {
            do {
                for index in copies[folder] ?? [] where batch[index].prepared.contentHash == nil
                    && (isFresh(batch[index].source) || verifiesCloudContent) {
                    batch[index].prepared.contentHash = try cloud.contentHash(of: batch[index].prepared.temporary)
                }
                guard try cloud.publishFolder(staged, at: folder) else {
                    log.info("\(folder) could not be created in the cloud folder in one step; its files are put there one by one")
                    continue
                }
                published.insert(folder)
            } catch {
                log.info("cannot publish \(folder) in the cloud folder: \(error); its files are put there one by one")
            }
        }
        // Recorded once published, not before; the others made as usual, before their files.
        for made in staging.folders {
            let action = Action.makeDirectory(made.path, on: .cloud, source: made.source)
            do {
                if published.contains(made.root) {
                    // One lent its owner's bits is recorded once its mode is set (`giveFoldersBack`).
                    if folderModes.withLock({ $0.lent[SidePath(.cloud, made.path)] == nil }) {
                        try recordWrite(made.path, on: .cloud, source: made.source)
                    }
                } else {
                    var unbatched: [PendingInstall]? = nil
                    try perform(action, batch: &unbatched)
                }
            } catch {
                handle(error, for: action, again: &again)
            }
        }
        expectEchoes(of: staging.folders.lazy.filter { published.contains($0.root) }.map(\.path), on: .cloud)
        return published
    }

    /// The bookkeeping of a copy published with its folder, as `install` does it: a folder
    /// rename changes no file inside, so what was written is what is there.
    func recordPublished(_ pending: PendingInstall) throws -> FileMetadata? {
        guard let installed = try pending.prepared.written ?? cloud.metadata(of: pending.path) else {
            throw CopyError.destinationChanged(pending.path)
        }
        let hash = isFresh(pending.source) || verifiesCloudContent ? pending.prepared.contentHash : nil
        return recordInstalled(pending, installed: installed, hash: hash, displaced: false)
    }

    /// Removes the staging folders not published, deepest first: their copies were installed
    /// (or discarded) one by one, so they are empty. One left over (a copy that could not be
    /// discarded) goes at the next sweep.
    func removeStagingFolders(_ staging: FolderStaging, except published: Set<RelativePath>) {
        for made in staging.folders.reversed() where !published.contains(made.root) {
            guard let staged = staging.roots[made.path] ?? staging.staged(made.path)?.path else { continue }
            do {
                try cloud.removeDirectory(staged)
            } catch {
                log.debug("cannot remove the staging folder \(staged) in the cloud folder: \(error); it goes at the next sweep")
            }
        }
    }
}
