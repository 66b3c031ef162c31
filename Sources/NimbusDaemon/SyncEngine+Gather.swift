import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// What a pass looks at: the base and both sides' current entries below its scope.
extension SyncEngine {
    struct Views {
        var base: [RelativePath: BaseEntry] = [:]
        var local: [RelativePath: FileMetadata] = [:]
        var cloud: [RelativePath: FileMetadata] = [:]
        /// Paths whose local side is a placeholder (`local` holds their base instead), with
        /// the placeholder file's metadata.
        var placeholders: [RelativePath: FileMetadata] = [:]
        /// Untracked placeholder files, by the path they stand for.
        var strays: [RelativePath: FileMetadata] = [:]
        /// Placeholder repairs planned by the fold, carried out before the pass's plan.
        var repairs: [Action] = []
        /// Paths left out of this pass until their repair is done.
        var withheld: Set<RelativePath> = []
        /// A placeholder and its file are not both in the pass: look at the whole folder.
        var needsWholeFolder = false
        /// Folders (or scope roots) that could not be read: left out of the views.
        var unreadable: [RelativePath] = []
    }

    /// The base and both sides' current entries for everything below the scope roots,
    /// without what is ignored or Nimbus's own.
    func gather(_ roots: [RelativePath]) -> Views {
        var views = Views()
        let isIgnored = settings.isIgnored
        let excluded: @Sendable (RelativePath, Bool) -> Bool = { path, isDirectory in
            path == RootMarkers.local || path == RootMarkers.cloudDirectory
                || TemporaryName.isTemporary(path.name) || isIgnored(path, isDirectory)
        }
        // Asked before each directory is entered: a stop (SIGTERM) ends the walk there.
        let descend = { [self] (path: RelativePath) throws -> Bool in
            try stopIfRequested()
            return !excluded(path, true)
        }
        // The folders above each scope root: a rename into an existing folder must see it.
        let ancestors = Set(roots.flatMap { root -> [RelativePath] in
            var chain: [RelativePath] = []
            var folder = root.parent
            while !folder.isRoot { chain.append(folder); folder = folder.parent }
            return chain
        }).filter { folder in !roots.contains { $0.contains(folder) } }
        // Only those on both sides: an ancestor gone from one side is not reconciled from
        // this partial view (it would look like a lone folder deletion, outside the
        // mass-delete guard's count of what is inside); its own event brings it in scope.
        var present = Set<RelativePath>()
        for folder in ancestors {
            guard let l = try? local.metadata(of: folder), l.kind == .directory,
                  let c = try? cloud.metadata(of: folder), c.kind == .directory else { continue }
            views.local[folder] = l
            views.cloud[folder] = c
            present.insert(folder)
        }
        state.withLock { s in
            for folder in present { if let base = s.index[folder]?.base { views.base[folder] = base } }
            if roots == [.root] { views.base.reserveCapacity(s.index.count) }
            for root in roots {
                for path in s.index.subtree(root) {
                    let base = s.index[path]!.base
                    if !excluded(path, base.kind == .directory) { views.base[path] = base }
                }
            }
        }
        var unreadable: [RelativePath] = []
        var problems: [SidePath: (message: String, cause: Errno?)] = [:]
        for root in roots {
            for side in Side.allCases {
                let fs = system(side)
                var found: [RelativePath: FileMetadata] = [:]
                do {
                    var scan: ScanResult?
                    if root.isRoot {
                        scan = try fs.scan(.root, descend: descend, checkpoint: stopCheckpoint)
                    } else if let meta = try fs.metadata(of: root), !excluded(root, meta.kind == .directory) {
                        found[root] = meta
                        if meta.kind == .directory { scan = try fs.scan(root, descend: descend, checkpoint: stopCheckpoint) }
                    }
                    found.reserveCapacity(found.count + (scan?.entries.count ?? 0))
                    for (path, meta) in scan?.entries ?? [] where !excluded(path, meta.kind == .directory) { found[path] = meta }
                    for (problem, path) in zip(scan?.problems ?? [], scan?.incomplete ?? []) {
                        problems[SidePath(side, path)] = ("cannot read \(path) in the \(side) folder: \(problem.errno); it is left as it is and retried",
                                                          problem.errno)
                        unreadable.append(path)
                    }
                } catch is CancellationError {
                    return views  // Stopping: the caller plans nothing from a half view.
                } catch {
                    problems[SidePath(side, root)] = ("cannot scan \(root) in the \(side) folder: \(error); it will be retried", Errno(of: error))
                    unreadable.append(root)
                }
                // Most passes have one root: the scan becomes the view as it is, without a rehash.
                if side == .local {
                    if views.local.isEmpty { views.local = found } else { views.local.merge(found) { $1 } }
                } else {
                    if views.cloud.isEmpty { views.cloud = found } else { views.cloud.merge(found) { $1 } }
                }
            }
        }
        tellUnreadable(problems, scope: roots)
        views.unreadable = unreadable
        // What could not be read must not look like a deletion: leave it out entirely.
        for path in unreadable {
            scheduleRetry(path, error: "unreadable")
            views.base = views.base.filter { !path.contains($0.key) }
            views.local = views.local.filter { !path.contains($0.key) }
            views.cloud = views.cloud.filter { !path.contains($0.key) }
        }
        foldPlaceholders(&views, scope: roots)
        return views
    }
}
