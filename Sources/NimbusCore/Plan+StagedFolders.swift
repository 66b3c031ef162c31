import NimbusVocabulary

extension Plan {
    /// The folders new on `side` that can be built whole in a staging folder and published
    /// with one rename (issue 15: a first sync renamed every file into place, one rename per
    /// file, where `cp -a` creates each file under its final name).
    ///
    /// A folder qualifies when this plan makes it on `side` and every other action naming it
    /// or anything beneath it is a `.makeDirectory` on `side` or a `.copy` to `side` that
    /// replaces nothing, planned after the folder's own `.makeDirectory`: the staged tree then
    /// holds exactly what the plan writes there, and nothing beneath it exists yet on that
    /// side to be checked, moved or kept. Anything else beneath (a symlink, a mode change, a
    /// rename, a placeholder, a record) and the folder is written as usual. Only the top-most
    /// qualifying folders are returned: the folders beneath them are staged with them.
    public func stagedFolders(on side: Side) -> Set<RelativePath> {
        var made: Set<RelativePath> = []
        var refused: Set<RelativePath> = []
        // Every path named so far and every folder above one.
        var named: Set<RelativePath> = []
        for action in actions {
            let paths = action.namedPaths
            switch action {
            case .makeDirectory(let path, let s, _) where s == side:
                // Something done at or beneath it before: not a new, empty folder.
                if named.contains(path) { refused.insert(path) }
                made.insert(path)
            case .copy(_, let s, _, nil) where s == side:
                break  // Beneath a folder made before it: part of it.
            default:
                for path in paths {
                    // The folders made so far above it…
                    var folder = path
                    while !folder.isRoot {
                        if made.contains(folder) { refused.insert(folder) }
                        folder = folder.parent
                    }
                    // …or beneath it (a removal or a rename of a folder above reaches them too);
                    // none when nothing was named beneath it yet.
                    if named.contains(path) {
                        for folder in made where path.contains(folder) { refused.insert(folder) }
                    }
                }
            }
            for path in paths {
                var folder = path
                while !folder.isRoot && named.insert(folder).inserted { folder = folder.parent }
            }
        }
        let qualified = made.subtracting(refused)
        return qualified.filter { folder in
            var above = folder.parent
            while !above.isRoot {
                if qualified.contains(above) { return false }
                above = above.parent
            }
            return true
        }
    }
}

extension Action {
    /// Every path the action names: both ends of a move, the file of a placeholder.
    var namedPaths: [RelativePath] {
        switch self {
        case .rename(let from, let to, _, _), .movePlaceholder(let from, let to, _),
             .renamePlaceholder(let from, let to, _), .rebase(let from, let to): [from, to]
        case .preserveConflict(let path, let copy, _, _): [path, copy]
        case .repairPlaceholder(let path, let file, _, _): [path, file]
        default: [path]
        }
    }
}
