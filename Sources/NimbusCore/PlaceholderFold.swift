import NimbusVocabulary

/// What the journal says about one path, as the fold needs it.
public struct PlaceholderRecord: Hashable, Sendable {
    public var base: BaseEntry
    public var isPlaceholder: Bool
    public init(base: BaseEntry, isPlaceholder: Bool) {
        self.base = base
        self.isPlaceholder = isPlaceholder
    }
}

/// The journal, read-only, as the fold sees it (a snapshot: the fold itself is pure).
public protocol PlaceholderRecords {
    func placeholderRecord(at path: RelativePath) -> PlaceholderRecord?
    func path(ofInode inode: UInt64, on side: Side) -> RelativePath?
    /// How many paths are placeholders: none spares the fold most of its work.
    var placeholderCount: Int { get }
}

/// What a small local file holds, read by the caller when the fold asks (`needsContents`).
public enum PlaceholderFileContents: Hashable, Sendable {
    case bytes([UInt8])
    /// Larger than any placeholder: a file of its own.
    case tooLarge
    /// Cannot be read now: neither a placeholder nor content yet.
    case unreadable
}

/// One pass's scan with its placeholders recognised (DESIGN §5).
public struct PlaceholderFold: Sendable {
    /// The local view with each placeholder file replaced by the file it stands for, at its
    /// base (reconcile sees a placeholder as its file, unchanged).
    public var local: [RelativePath: FileMetadata]
    /// Paths whose local side is a placeholder, with the placeholder file's metadata.
    public var placeholders: [RelativePath: FileMetadata] = [:]
    /// Untracked placeholder files whose file is in the cloud, by the path they stand for:
    /// the placeholder written there replaces them.
    public var strays: [RelativePath: FileMetadata] = [:]
    /// Repairs for the executor, before anything is reconciled.
    public var repairs: [Action] = []
    /// Paths left out of this pass (a repair concerns them; or unreadable): not a deletion,
    /// not a creation; they are looked at again.
    public var withheld: Set<RelativePath> = []
    /// Files whose contents the fold needs to decide; read them and fold again.
    public var needsContents: Set<RelativePath> = []
    /// A placeholder and the file it stands for are not both in the pass: look at the
    /// whole folder instead (a pass over half the picture would take one for new or gone).
    public var needsWholeFolder = false
    /// Files that could not be read: retried later.
    public var unreadable: [RelativePath] = []
    /// Placeholders renamed here (found by their inode), by new path: the path they had.
    var renamedFrom: [RelativePath: RelativePath] = [:]
    /// Local files a repair already deals with (not folded again as candidates). Distinct
    /// from `withheld`: `x.nimbus` may be both the placeholder file of `x` and the path of a
    /// cloud file `x.nimbus`.
    var handled: Set<RelativePath> = []
}

/// Recognises the placeholders in a local scan and plans their repairs, without touching
/// anything: the executor carries out `repairs` under the lock table, re-checking each file.
///
/// - `scope`: the roots the scan covered; a name outside them is unknown, not absent.
/// - `contents`: what small files hold, for those the fold asked for in `needsContents`.
/// - `namer`: conflict names, for a placeholder moved off a name another file holds.
/// - `filling`: real-name placeholders being filled for a reader as the scan ran.
public func foldPlaceholders(style: PlaceholderStyle, scope: [RelativePath], base: [RelativePath: BaseEntry],
                             local: [RelativePath: FileMetadata], cloud: [RelativePath: FileMetadata],
                             records: some PlaceholderRecords, contents: [RelativePath: PlaceholderFileContents] = [:],
                             namer: ConflictNamer, filling: Set<RelativePath> = []) -> PlaceholderFold {
    var fold = PlaceholderFold(local: local)
    if records.placeholderCount > 0 {
        foldPlaceholdersOfTheOtherStyle(&fold, style: style, base: base, cloud: cloud, records: records, contents: contents)
    }
    switch style {
    case .suffix:
        let folder = SuffixFolder(scope: scope, base: base, cloud: cloud, records: records, contents: contents, namer: namer)
        folder.fold(&fold)
    case .realName:
        foldRealNamePlaceholders(&fold, base: base, records: records, filling: filling)
    }
    // A tracked placeholder missing from the pass may have been renamed to a name outside
    // it (its events not read yet): unlike a file, a placeholder cannot be uploaded again
    // from its new name, so the whole folder is looked at before concluding it was deleted.
    if records.placeholderCount > 0, scope != [.root],
       base.keys.contains(where: { fold.local[$0] == nil && !fold.withheld.contains($0) && records.placeholderRecord(at: $0)?.isPlaceholder == true }) {
        fold.needsWholeFolder = true
    }
    return fold
}

/// Real-name placeholders are recognised by the journal alone: a tracked placeholder whose
/// file is unchanged stands for its cloud file. One that changed was filled or written: it
/// is content now, and reconcile treats it as any file's change. One being filled is still
/// the placeholder: the fill's writes move its time until the fill ends and restores it, and
/// taken for an edit, the cloud's own half-copied bytes would be uploaded over the cloud
/// file. The fill's outcome (`applyHydration`) settles what it is.
private func foldRealNamePlaceholders(_ fold: inout PlaceholderFold, base: [RelativePath: BaseEntry], records: some PlaceholderRecords,
                                      filling: Set<RelativePath>) {
    guard records.placeholderCount > 0 else { return }
    for path in base.keys {
        guard let record = records.placeholderRecord(at: path), record.isPlaceholder, let meta = fold.local[path],
              meta.kind == .file else { continue }
        var recorded = record.base.local
        if isGuarded(meta, as: recorded) || filling.contains(path) {
            // Guarded (no permission bits while no daemon listened), or being filled: still the
            // file it stands for.
        } else if meta.isUnchanged(from: recorded.withMode(meta.mode)) {
            // chmod: a change of the file's mode, not of its content.
            recorded.mode = meta.mode
        } else {
            continue
        }
        fold.placeholders[path] = meta
        fold.local[path] = recorded
    }
}

extension FileMetadata {
    func withMode(_ mode: UInt32) -> FileMetadata {
        var copy = self
        copy.mode = mode
        return copy
    }
}

/// A real-name placeholder guarded while no daemon listened: its permission bits taken away,
/// everything else as the journal recorded it (DESIGN §5).
public func isGuarded(_ found: FileMetadata, as recorded: FileMetadata) -> Bool {
    found.mode == 0 && recorded.mode != 0 && found.kind == recorded.kind && found.size == recorded.size
        && found.mtime == recorded.mtime && found.inode == recorded.inode
}
