import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// A revert brings back what the deletions it undoes kept (see SyncEngine+KeptDeletions.swift):
/// each local file moved out of its holding folder to where it was, each cloud file out of
/// the versions store.
extension SyncEngine {
    /// Brings back what `deletions` removed (see `AppliedDeletions.restoreOrder`), each with
    /// no base, so that the next pass copies it to the side that lost it. Returns the paths
    /// brought back; what cannot be is logged with where it is kept.
    func restore(_ deletions: [AppliedDeletion]) -> Set<RelativePath> {
        var restored = Set<RelativePath>()
        for deletion in AppliedDeletions.restoreOrder(deletions) {
            let path = deletion.path, fs = system(deletion.side)
            do {
                switch deletion.kept {
                case .nothing:
                    continue
                case .folder(let mode):
                    if try fs.metadata(of: path) == nil {
                        try makeDirectories(path.parent, in: fs)
                        try fs.makeDirectory(path, mode: mode)
                    }
                case .localFile(let place):
                    restored.insert(try bringBackKept(place, at: path))
                case .cloudVersion(let version, let size):
                    try makeDirectories(path.parent, in: cloud)
                    try cloud.rename(version, to: path, replacing: false)
                    state.withLock {
                        $0.status.versionsCount -= 1
                        $0.status.versionsBytes -= size
                    }
                }
                setRecord(path, nil)
                restored.insert(path)
            } catch {
                let kept = switch deletion.kept {
                case .localFile(let place): "; it is kept in the local folder as \(place)"
                case .cloudVersion: "; it is kept in the versions store ('nimbusctl versions \(path)' lists it)"
                default: ""
                }
                log.error("could not bring back \(path) in the \(deletion.side) folder: \(error)\(kept)")
            }
        }
        return restored
    }

    /// Moves a kept local file back to `path` (beside a new file there, as a conflict copy).
    /// Where that cannot be (a file now stands where its folder was), it comes back at the
    /// top of the local folder under its own name, rather than stay in the holding folder,
    /// which goes. Returns where it is.
    private func bringBackKept(_ place: RelativePath, at path: RelativePath) throws -> RelativePath {
        do {
            // A folder that went with it comes back with its own mode, kept by its stand-in
            // in the holding folder (after a restart, nothing else remembers it).
            let holding = RootMarkers.deletedHolding(containing: place) ?? RootMarkers.deletedHolding
            try makeLocalFolders(path.parent) { holding.appending($0) }
            return try putBackKept(place, at: path)
        } catch where !path.parent.isRoot {
            let top = try RelativePath.root.appending(name: path.name)
            log.warning("\(path) cannot be brought back where it was (\(error)); it is brought back at the top of the local folder")
            return try putBackKept(place, at: top)
        }
    }

    /// Moves a kept local file back to `path` (see `putBack`), and removes the folders of the
    /// holding place it leaves empty.
    private func putBackKept(_ place: RelativePath, at path: RelativePath) throws -> RelativePath {
        let back = try putBack(place, at: path) { copy in
            "a new \(path) appeared since its deletion was applied; the deleted one is brought back as \(copy)"
        }
        defer { removeEmptyHoldingFolders(above: place) }
        return back
    }

    private func removeEmptyHoldingFolders(above place: RelativePath) {
        guard let holding = RootMarkers.deletedHolding(containing: place) else { return }
        var folder = place.parent
        while holding.contains(folder) {
            guard (try? local.removeDirectory(folder)) != nil else { return }
            folder = folder.parent
        }
        if RootMarkers.deletedSpill.contains(holding) { try? local.removeDirectory(RootMarkers.deletedSpill) }
    }
}
