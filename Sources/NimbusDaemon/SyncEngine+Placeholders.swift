import NimbusCore
import NimbusSystem
import NimbusVocabulary

extension SyncIndex: PlaceholderRecords {
    func placeholderRecord(at path: RelativePath) -> PlaceholderRecord? {
        self[path].map { PlaceholderRecord(base: $0.base, isPlaceholder: $0.isPlaceholder) }
    }

    var placeholderCount: Int { placeholders }
}

/// Placeholders in the sync pass (DESIGN §5). The scan finds placeholder files; the pure
/// `foldPlaceholders` replaces them in the local view by the file they stand for, unchanged
/// since its base, so that reconcile propagates their renames and deletions like any
/// file's, and plans the repairs they need. Nothing here writes: the repairs run in the
/// executor, under the lock table. `adaptForPlaceholders` then keeps content from ever
/// being read out of a placeholder.
extension SyncEngine {
    /// The paths to look at for `paths`: a placeholder's events concern the file it stands
    /// for, and a file's concern its placeholder (which may itself be the name of a cloud file).
    func withPlaceholderNames(_ paths: Set<RelativePath>) -> Set<RelativePath> {
        var all = paths
        for path in paths {
            if let target = Placeholder.target(of: path) { all.insert(target) }
            if let file = Placeholder.file(for: path) { all.insert(file) }
        }
        return all
    }

    /// Recognises the placeholders in `views.local` (reading the small files the fold asks
    /// about), and leaves what is to be repaired out of the views.
    func foldPlaceholders(_ views: inout Views, scope: [RelativePath]) {
        let style = settings.placeholderStyle
        let index = state.withLock { $0.index }
        let namer = namer
        let filling = placeholdersBeingFilled(views, index: index)
        var contents: [RelativePath: PlaceholderFileContents] = [:]
        var fold = NimbusCore.foldPlaceholders(style: style, scope: scope, base: views.base, local: views.local, cloud: views.cloud,
                                               records: index, namer: namer, filling: filling)
        for _ in 0..<3 where !fold.needsContents.isEmpty {
            for file in fold.needsContents { contents[file] = readSmallFile(file) }
            fold = NimbusCore.foldPlaceholders(style: style, scope: scope, base: views.base, local: views.local, cloud: views.cloud,
                                               records: index, contents: contents, namer: namer, filling: filling)
        }
        for file in fold.unreadable { scheduleRetry(file, error: "unreadable") }
        views.local = fold.local
        views.placeholders = fold.placeholders
        views.strays = fold.strays
        views.repairs = fold.repairs
        views.needsWholeFolder = fold.needsWholeFolder
        views.withheld = fold.withheld
        for path in fold.withheld {
            views.base[path] = nil
            views.cloud[path] = nil
        }
    }

    /// The real-name placeholders of the scan that the hydration server is filling for a
    /// reader now (their time moved by the fill's writes): the fold keeps them placeholders.
    func placeholdersBeingFilled(_ views: Views, index: SyncIndex) -> Set<RelativePath> {
        guard settings.placeholderStyle == .realName, let marker, index.placeholders > 0 else { return [] }
        var filling = Set<RelativePath>()
        for (path, found) in views.local where found.kind == .file {
            guard let record = index[path], record.isPlaceholder, !found.isUnchanged(from: record.base.local),
                  marker.isBeingFilled(found) else { continue }
            filling.insert(path)
        }
        return filling
    }

    /// What a small local file holds, for the fold.
    func readSmallFile(_ file: RelativePath) -> PlaceholderFileContents {
        do {
            return .bytes(try local.readFile(file, limit: Placeholder.maximumSize))
        } catch let error as SystemError where error.errno == .fileTooLarge {
            return .tooLarge
        } catch {
            return .unreadable
        }
    }

    /// Whether `file` holds a placeholder's text; nil when it cannot be read now.
    func isPlaceholderFile(_ file: RelativePath) -> Bool? {
        switch readSmallFile(file) {
        case .bytes(let bytes): Placeholder.parse(bytes) != nil
        case .tooLarge: false
        case .unreadable: nil
        }
    }

    /// Whether a cloud file at `path` is downloaded rather than shown as a placeholder: in
    /// mirror mode unless evicted; in on-demand mode only when it or a folder above it is pinned.
    func keepsLocalCopy(_ path: RelativePath) -> Bool {
        let residency = state.withLock { $0.index[path]?.residency }
        return NimbusCore.keepsLocalCopy(pinned: residency == .pinned, evicted: residency == .evicted, onDemand: settings.onDemand,
                                         pinnedByFolder: isPinnedByFolder(path))
    }

    /// Whether a folder above `path` is pinned.
    func isPinnedByFolder(_ path: RelativePath) -> Bool {
        state.withLock { s in
            var folder = path.parent
            while !folder.isRoot {
                if s.index[folder]?.residency == .pinned { return true }
                folder = folder.parent
            }
            return false
        }
    }

    func adapt(_ plan: Plan, _ views: Views) -> Plan {
        let style = settings.placeholderStyle
        return adaptForPlaceholders(plan, placeholders: views.placeholders, strays: views.strays, style: style, local: views.local,
                                    cloud: views.cloud) { path in
            // A file of someone's holds the placeholder's name: the file itself comes instead.
            // (A name too long for one is an error, `PlaceholderNameTooLong`.)
            keepsLocalCopy(path) || (style.hasNameOfItsOwn && (style.file(for: path).map { views.local[$0] != nil } ?? false))
        }
    }
}
