import NimbusVocabulary

/// Whether a cloud file is downloaded rather than shown as a placeholder (DESIGN §5): in
/// mirror mode unless the user evicted it; in on-demand mode only when it or a folder above
/// it is pinned.
public func keepsLocalCopy(pinned: Bool, evicted: Bool, onDemand: Bool, pinnedByFolder: Bool) -> Bool {
    if pinned { return true }
    if evicted { return false }
    return !onDemand || pinnedByFolder
}

/// Why a downloaded file may not become a placeholder again.
public enum EvictionRefusal: Error, Hashable, Sendable {
    /// Its name leaves no room for the placeholder's (the suffix style only).
    case noRoomForPlaceholder
    /// The placeholder's name is another entry's, here, in the cloud or in the journal (the
    /// suffix style only: `x.nimbus` may be a cloud file or folder of its own).
    case placeholderNameTaken
    case pinned
    /// Changes not yet uploaded or downloaded, a conflict, or a copy in progress.
    case notInSync
    /// Open in some process.
    case isOpen
}

/// Whether the downloaded file `path` may be evicted (DESIGN §5): only a file in sync (both
/// sides as its base says, no conflict, nothing in progress), not pinned, not open, and
/// with a name for its placeholder (`isTaken`: whether a name is another entry's). nil: it may.
public func evictionRefusal(_ path: RelativePath, style: PlaceholderStyle, base: BaseEntry, here: FileMetadata?, there: FileMetadata?,
                            pinned: Bool, hasConflict: Bool, inProgress: Bool, isOpen: (FileMetadata) -> Bool,
                            isTaken: (RelativePath) -> Bool) -> EvictionRefusal? {
    guard let file = style.file(for: path) else { return .noRoomForPlaceholder }
    if style.hasNameOfItsOwn && isTaken(file) { return .placeholderNameTaken }
    if pinned { return .pinned }
    guard let here, here.isUnchanged(from: base.local), let there, there.isUnchanged(from: base.cloud),
          !hasConflict, !inProgress else { return .notInSync }
    return isOpen(here) ? .isOpen : nil
}

/// The plan for evicting `path`: one `evict` action, or why it is refused (the parameters
/// are `evictionRefusal`'s).
public func planEviction(_ path: RelativePath, style: PlaceholderStyle, base: BaseEntry, here: FileMetadata?, there: FileMetadata?,
                         pinned: Bool, hasConflict: Bool, inProgress: Bool, isOpen: (FileMetadata) -> Bool,
                         isTaken: (RelativePath) -> Bool) -> Result<Action, EvictionRefusal> {
    if let refusal = evictionRefusal(path, style: style, base: base, here: here, there: there, pinned: pinned, hasConflict: hasConflict,
                                     inProgress: inProgress, isOpen: isOpen, isTaken: isTaken) {
        return .failure(refusal)
    }
    return .success(.evict(path, expected: here!, cloud: there!))
}

/// The mass-delete guard's predicate (DESIGN §3): a plan deleting, on one side, more than
/// `maxPercent` of the `tracked` entries and more than `minimum` entries — deletions made in
/// the recent window (`recentDeletions`) counted too, so an `rm` spread over several passes
/// is caught — has all its deletions there held. Deletions already held stay held, and so
/// do the folders above them.
/// Placeholder removals count like any file's: an emptied local folder in on-demand mode
/// is mostly placeholders.
public func deletionsToHold(_ plan: Plan, tracked: Int, alreadyHeld: Set<RelativePath>, recentDeletions: [Side: Int],
                            maxPercent: Int, minimum: Int) -> (held: [Action], newlyHeldOn: [Side]) {
    var held: [Action] = []
    var newlyHeldOn: [Side] = []
    for side in Side.allCases {
        let deletions = plan.deletions(on: side)
        let newOnes = deletions.filter { !alreadyHeld.contains($0.path) }
        let recent = recentDeletions[side, default: 0]
        let count = newOnes.count + recent
        if !newOnes.isEmpty && count > minimum && count * 100 > (tracked + recent) * maxPercent {
            held += deletions
            newlyHeldOn.append(side)
        } else {
            held += deletions.filter { alreadyHeld.contains($0.path) }
        }
    }
    // A folder whose content's deletion is held stays too: removing it would only fail
    // ("not empty") and leave the folder in error until the user decides.
    var holdingFolders = Set<RelativePath>()
    for path in alreadyHeld.union(held.map(\.path)) {
        var folder = path.parent
        while !folder.isRoot, holdingFolders.insert(folder).inserted { folder = folder.parent }
    }
    let heldSoFar = Set(held.map(\.path))
    for side in Side.allCases {
        held += plan.deletions(on: side).filter { holdingFolders.contains($0.path) && !heldSoFar.contains($0.path) }
    }
    return (held, newlyHeldOn)
}

/// `plan` without the held deletions, nor what would be created where they remove something.
public func withoutHeld(_ plan: Plan, _ held: [Action]) -> Plan {
    guard !held.isEmpty else { return plan }
    let heldPaths = Set(held.map(\.path))
    var filtered = plan
    filtered.actions = plan.actions.filter { action in !heldPaths.contains(where: { $0.contains(action.path) }) }
    return filtered
}
