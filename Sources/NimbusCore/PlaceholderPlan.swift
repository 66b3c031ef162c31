import NimbusVocabulary

/// Turns reconcile's plan into one that respects placeholders (DESIGN §5). Reconcile sees a
/// placeholder as the file it stands for, unchanged since its base; this pass then makes
/// sure that a placeholder is never uploaded as if it were content, that a cloud change to
/// a file that is only a placeholder rewrites the placeholder instead of downloading it,
/// and that new cloud files become placeholders where no local copy is wanted.
///
/// - `placeholders`: the paths whose local side is a placeholder, with the metadata of the
///   placeholder file as it is now (the expectation for replacing or removing it).
/// - `strays`: placeholder files nothing tracks (a journal lost, a copy from elsewhere), by
///   the path they stand for; a new placeholder there replaces them.
/// - `keepsLocalCopy`: whether `path` should be downloaded (mirror mode, pinned) rather than
///   shown as a placeholder.
/// - `style`, `local`, `cloud`: in the suffix style a cloud entry may arrive under the name
///   a placeholder holds (a folder `x.nimbus` beside the file `x`), or a placeholder be
///   renamed to a name whose `.nimbus` a local file holds; the placeholder then yields: its
///   file is downloaded (from `cloud`) instead, so that no name is fought over.
public func adaptForPlaceholders(_ plan: Plan, placeholders: [RelativePath: FileMetadata],
                                 strays: [RelativePath: FileMetadata] = [:], style: PlaceholderStyle = .suffix,
                                 local: [RelativePath: FileMetadata] = [:], cloud: [RelativePath: FileMetadata] = [:],
                                 keepsLocalCopy: (RelativePath) -> Bool) -> Plan {
    guard !placeholders.isEmpty || !strays.isEmpty || plan.actions.contains(where: { isNewDownload($0) }) else { return plan }
    var adapted = plan
    adapted.actions = []
    var dropped = Set<RelativePath>()
    for action in plan.actions {
        switch action {
        case .copy(let path, .local, let source, let replacing):
            if let file = placeholders[path] {
                if keepsLocalCopy(path) && !style.hasNameOfItsOwn {
                    // Pinned, and the placeholder is the file itself: the download replaces it.
                    adapted.actions.append(.copy(path, to: .local, source: source, replacing: file))
                } else if keepsLocalCopy(path) {
                    // Pinned: download it, then the placeholder goes.
                    adapted.actions.append(.copy(path, to: .local, source: source, replacing: nil))
                    adapted.actions.append(.removePlaceholder(path, expected: file))
                } else {
                    adapted.actions.append(.writePlaceholder(path, source: source, replacing: file))
                }
            } else if replacing == nil && !keepsLocalCopy(path) {
                adapted.actions.append(.writePlaceholder(path, source: source, replacing: strays[path]))
            } else {
                adapted.actions.append(action)
            }
        case .setMode(let path, .local, let source, _) where placeholders[path] != nil:
            adapted.actions.append(.writePlaceholder(path, source: source, replacing: placeholders[path]))
        case .remove(let path, .local, _) where placeholders[path] != nil:
            adapted.actions.append(.removePlaceholder(path, expected: placeholders[path]!))
        case .rename(let from, let to, .local, _) where placeholders[from] != nil:
            adapted.actions.append(.renamePlaceholder(from: from, to: to, expected: placeholders[from]!))
        case .makeSymlink(let path, .local, let source, _) where placeholders[path] != nil:
            adapted.actions.append(.removePlaceholder(path, expected: placeholders[path]!))
            adapted.actions.append(.makeSymlink(path, on: .local, source: source, replacing: nil))
        case .preserveConflict(let path, _, .local, _) where placeholders[path] != nil:
            // A placeholder holds nothing to preserve; the copy that follows rewrites it.
            dropped.insert(path)
        case .copy(let path, .cloud, _, _) where placeholders[path] != nil:
            // A placeholder has no content to upload: its file is gone from the cloud (a
            // rename here met a deletion there), so the placeholder goes too.
            adapted.actions.append(.removePlaceholder(path, expected: placeholders[path]!))
        case .setMode(let path, .cloud, _, _) where placeholders[path] != nil && style.hasNameOfItsOwn:
            // A suffix placeholder's mode is its own (0644), not the file's.
            continue
        default:
            adapted.actions.append(action)
        }
    }
    adapted.conflicts.removeAll { dropped.contains($0.path) }
    if style.hasNameOfItsOwn && !placeholders.isEmpty {
        yieldPlaceholderNames(&adapted, placeholders: placeholders, local: local, cloud: cloud)
    }
    return adapted
}

/// A local creation or rename at the name of a placeholder (`x.nimbus`, a cloud folder or a
/// pinned cloud file of that name) would fail forever: the placeholder's file `x` is downloaded
/// and the placeholder removed just before, so that the name is free and nothing is lost.
/// Likewise a placeholder renamed to `y` where a local file holds `y.nimbus`: `y` is
/// downloaded instead of its placeholder written.
private func yieldPlaceholderNames(_ plan: inout Plan, placeholders: [RelativePath: FileMetadata],
                                   local: [RelativePath: FileMetadata], cloud: [RelativePath: FileMetadata]) {
    let planned = Set(plan.actions.map(\.path))
    var actions: [Action] = []
    var yielded = Set<RelativePath>()
    for action in plan.actions {
        switch action {
        case .renamePlaceholder(let from, let to, let expected):
            if let file = Placeholder.file(for: to), local[file] != nil, let source = cloud[to], source.kind == .file {
                actions.append(.removePlaceholder(from, expected: expected))
                actions.append(.copy(to, to: .local, source: source, replacing: nil))
                continue
            }
        case .makeDirectory(let path, .local, _), .copy(let path, .local, _, nil), .makeSymlink(let path, .local, _, nil),
             .rename(_, let path, .local, _):
            if let target = Placeholder.target(of: path), let file = placeholders[target], !planned.contains(target),
               !yielded.contains(target), let source = cloud[target], source.kind == .file {
                actions.append(.copy(target, to: .local, source: source, replacing: nil))
                actions.append(.removePlaceholder(target, expected: file))
                yielded.insert(target)
            }
        default:
            break
        }
        actions.append(action)
    }
    plan.actions = actions
}

/// A cloud file that does not exist locally at all: in on-demand mode it may become a
/// placeholder.
private func isNewDownload(_ action: Action) -> Bool {
    if case .copy(_, .local, _, nil) = action { return true }
    return false
}
