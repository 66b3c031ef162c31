import NimbusVocabulary

/// Placeholders still in the other style: a switch of style converts every placeholder at
/// start (`planPlaceholderConversion`), but one whose new name is taken stays as it was, and
/// its record still describes the old file (`x.nimbus`, or the sparse `x`). The style's own
/// fold knows nothing of that file: to the real-name fold `x.nimbus` was a new file to upload
/// (the placeholder's text as content), or, found by its inode, `x` renamed to `x.nimbus` in
/// the cloud too; to the suffix fold a file of the user's at `x.nimbus` was `x`'s placeholder
/// written into, moved off to a conflict name. So these are settled first, here:
///
/// - the new name free (the user removed or renamed what held it, or nothing ever did): the
///   conversion completes, as it would have at start;
/// - suffix → real names, `x` taken: that `x` is the user's version of the file, as a real
///   file beside its suffix placeholder always is (the real file wins): it replaces the
///   placeholder in the record, in sync when it holds the cloud's bytes, else a change here
///   that reconcile propagates (a conflict if the cloud changed too), and the placeholder
///   goes. Nothing of the user's is overwritten; the cloud's old content is versioned;
/// - real names → suffix, `x.nimbus` taken (a file of its own, synced under that name) or
///   too long a name: the sparse `x` cannot stay, with no listener to fill it, and the suffix
///   style has no other name for it, so `x` is downloaded over it, as the suffix style does
///   whenever a placeholder's name is another file's (`adaptForPlaceholders`); with `x` gone
///   from the cloud, the sparse `x` goes (`retirePlaceholder`), as a placeholder does;
/// - a suffix placeholder written into: what was written is kept under a conflict name and a
///   fresh placeholder put back (`repairPlaceholder`), which the next pass converts.
///
/// The paths concerned are left out of this pass and looked at again once the repairs are done.
func foldPlaceholdersOfTheOtherStyle(_ fold: inout PlaceholderFold, style: PlaceholderStyle, base: [RelativePath: BaseEntry],
                                     cloud: [RelativePath: FileMetadata], records: some PlaceholderRecords,
                                     contents: [RelativePath: PlaceholderFileContents]) {
    let other: PlaceholderStyle = style == .suffix ? .realName : .suffix
    // The other style's file of a placeholder is rarely there: only those are sorted (for
    // the order of the repairs), not every path of the pass.
    let candidates = base.keys.filter { path in
        guard let record = records.placeholderRecord(at: path), record.isPlaceholder, let old = other.file(for: path),
              let found = fold.local[old] else { return false }
        return found.kind == .file && found.inode == record.base.local.inode
    }
    for path in candidates.sorted() {
        guard let record = records.placeholderRecord(at: path), let old = other.file(for: path), let found = fold.local[old],
              !fold.withheld.contains(old), !fold.withheld.contains(path),
              isWritten(in: other, path, record, found: found, file: old, contents, &fold) == true else { continue }
        let recorded = record.base.local
        let new = style.file(for: path)
        func withhold(_ paths: RelativePath?...) {
            for case let p? in paths {
                fold.withheld.insert(p)
                fold.local[p] = nil
            }
        }
        switch other {
        case .suffix:
            // `x.nimbus`, the placeholder of `x`; the new name is `x` itself.
            if !found.isUnchanged(from: recorded) {
                switch holdsAPlaceholder(old, contents, &fold) {
                case true?: break
                case false?:
                    fold.repairs.append(.repairPlaceholder(path, file: old, edited: found, cloud: record.base.cloud))
                    withhold(path, old)
                    continue
                case nil:
                    withhold(path, old)  // Read first (or unreadable now): looked at again.
                    continue
                }
            }
            if let mine = fold.local[path] {
                fold.repairs.append(.adoptLocalFile(path, local: mine, cloud: cloud[path]))
                fold.repairs.append(.retirePlaceholder(file: old, expected: found))
            } else {
                fold.repairs.append(.convertPlaceholder(path, to: style, expected: found, cloud: record.base.cloud))
            }
            withhold(path, old)
        case .realName:
            // The sparse `x`; the new name is `x.nimbus`. Changed, it was filled or written:
            // content of its own, which reconcile treats as any file's change.
            guard found.isUnchanged(from: recorded) || isGuarded(found, as: recorded) else { continue }
            if let new, fold.local[new] == nil {
                fold.repairs.append(.convertPlaceholder(path, to: style, expected: found, cloud: record.base.cloud))
                withhold(path, new)
            } else {
                // `x.nimbus` is a file of its own, never `x`'s placeholder. (No such name at
                // all, `x` too long for the suffix: downloaded too, as the suffix style does.)
                if let new { fold.handled.insert(new) }
                if let source = cloud[path], source.kind == .file {
                    fold.repairs.append(.copy(path, to: .local, source: source, replacing: found))
                } else {
                    // Gone from the cloud (or a folder there now): it stands for nothing, and goes.
                    fold.repairs.append(.retirePlaceholder(file: path, expected: found))
                }
                withhold(path)
            }
        }
    }
}

/// Whether the journal's placeholder of `path`, found unmoved at `file` (its inode), was
/// written in `style`: the other style's file is the same by its metadata when a suffix
/// placeholder is renamed to the name it stands for, or a real-name one to its name plus
/// `.nimbus` (renames the style's own fold knows). The recorded size tells: a suffix
/// placeholder's is its text's, a real-name one's the cloud file's. When both are the same,
/// a suffix-style pass reads the file (no listener fills it); a real-name pass does not read
/// what may be a marked placeholder, and leaves it to its own fold. Nil: asked for its bytes.
private func isWritten(in style: PlaceholderStyle, _ path: RelativePath, _ record: PlaceholderRecord, found: FileMetadata,
                       file: RelativePath, _ contents: [RelativePath: PlaceholderFileContents], _ fold: inout PlaceholderFold) -> Bool? {
    let recorded = record.base.local
    // Only real-name placeholders are guarded.
    if isGuarded(found, as: recorded) { return style == .realName }
    let textSize = Int64(Placeholder.contents(for: path, cloud: record.base.cloud).count)
    switch (recorded.size == textSize, recorded.size == record.base.cloud.size) {
    case (true, false): return style == .suffix
    case (false, true): return style == .realName
    default:
        guard style == .realName else { return false }
        switch contents[file] {
        case nil:
            fold.needsContents.insert(file)
            return nil
        case .bytes(let bytes)?: return Placeholder.parse(bytes) == nil
        case .tooLarge?: return true
        case .unreadable?: return false
        }
    }
}

/// Whether the small file `file` holds a placeholder's text (a suffix placeholder touched,
/// or rewritten with the same text): still a placeholder, never content to keep. Nil when
/// not known yet (its bytes are asked for) or unreadable now.
private func holdsAPlaceholder(_ file: RelativePath, _ contents: [RelativePath: PlaceholderFileContents],
                               _ fold: inout PlaceholderFold) -> Bool? {
    switch contents[file] {
    case nil:
        fold.needsContents.insert(file)
        return nil
    case .bytes(let bytes)?: return Placeholder.parse(bytes) != nil
    case .tooLarge?: return false
    case .unreadable?:
        fold.unreadable.append(file)
        return nil
    }
}
