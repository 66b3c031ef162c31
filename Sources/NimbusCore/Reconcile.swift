import NimbusVocabulary

/// Three-way reconciliation (DESIGN §4): compares each side with the base (the state at the
/// last sync) and plans what to propagate. Pure: no I/O, no clock.
///
/// The rule it never breaks (Unison's): a change is propagated over an unchanged entry, and
/// when both sides changed differently nothing is overwritten — the local version is kept
/// under a conflict name and both versions end up on both sides.
///
/// - Parameters:
///   - base: the synced state of every path in scope.
///   - local, cloud: the current entries of every path in scope (absent = not there).
///   - hashes: content hashes already computed, per side; where "same content?" must be
///     decided without them, the plan lists the path in `needsHashes` instead.
///   - namer: names conflict copies.
public func reconcile(base: [RelativePath: BaseEntry],
                      local: [RelativePath: FileMetadata],
                      cloud: [RelativePath: FileMetadata],
                      hashes: SideHashes = SideHashes(),
                      namer: ConflictNamer) -> Plan {
    var reconciler = Reconciler(base: base, local: local, cloud: cloud, hashes: hashes, namer: namer)
    return reconciler.run()
}

public struct SideHashes: Sendable {
    public var local: [RelativePath: ContentHash] = [:]
    public var cloud: [RelativePath: ContentHash] = [:]
    public init(local: [RelativePath: ContentHash] = [:], cloud: [RelativePath: ContentHash] = [:]) {
        self.local = local
        self.cloud = cloud
    }
}

struct Reconciler {
    var base: [RelativePath: BaseEntry]
    var views: [Side: [RelativePath: FileMetadata]]
    let hashes: SideHashes
    let namer: ConflictNamer

    var moves: [Action] = []
    var deletions: [Action] = []
    var creations: [Action] = []
    var records: [Action] = []
    var plan = Plan()
    /// Directories with something created or modified below them, per side: such a
    /// directory is never deleted to follow the other side (DESIGN §4).
    var changedBelow: [Side: Set<RelativePath>] = [:]
    /// Paths already settled by the rename pass (folders it creates).
    var settled: Set<RelativePath> = []
    /// Where entries re-keyed by a planned rename still are on disk, per side.
    var origins: [Side: [RelativePath: RelativePath]] = [.local: [:], .cloud: [:]]
    /// Per side, every path whose entry is not exactly its base (`Differences`); nil when a
    /// rename re-keyed the maps since it was made.
    var differences: Differences?

    init(base: [RelativePath: BaseEntry], local: [RelativePath: FileMetadata],
         cloud: [RelativePath: FileMetadata], hashes: SideHashes, namer: ConflictNamer) {
        self.base = base
        self.views = [.local: local, .cloud: cloud]
        self.hashes = hashes
        self.namer = namer
    }

    mutating func run() -> Plan {
        for side in Side.allCases { propagateRenames(detectedOn: side) }
        let differences = currentDifferences()
        for side in Side.allCases { changedBelow[side] = directoriesWithChanges(on: side, differences[side]) }
        for path in pathsToReconcile(differences) { reconcilePath(path) }
        // Deletions run children first; everything else parents first (paths are sorted so).
        plan.actions = moves + deletions.reversed() + creations + records
        return plan
    }

    /// Every path that may need an action, sorted (parents first): those that differ from
    /// their base on either side, and those whose base is in doubt. In a large tree nearly
    /// every path is as synced on both sides, and is not even sorted.
    func pathsToReconcile(_ differences: Differences) -> [RelativePath] {
        var paths = Set(differences.local).union(differences.cloud)
        for (path, entry) in base where entry.isAmbiguous { paths.insert(path) }
        return paths.filter { !$0.isRoot && !settled.contains($0) }.sorted()
    }

    /// The differences of the current maps, made again after a rename re-keyed them.
    mutating func currentDifferences() -> Differences {
        if let differences { return differences }
        let made = Differences(base: base, local: views[.local]!, cloud: views[.cloud]!)
        differences = made
        return made
    }

    // MARK: - One path

    mutating func reconcilePath(_ path: RelativePath) {
        let entry = base[path]
        let l = views[.local]![path], c = views[.cloud]![path]
        if l?.kind == .special || c?.kind == .special {
            plan.skipped.append(path)
            return
        }
        var localChange = Change.between(base: entry?.local, current: l)
        var cloudChange = Change.between(base: entry?.cloud, current: c)
        if let entry, entry.isAmbiguous, entry.kind == .file {
            // Same metadata may still hide a same-size write in the recording's tick.
            let checkedLocal = verified(path, .local, localChange, entry)
            let checkedCloud = verified(path, .cloud, cloudChange, entry)
            guard let l = checkedLocal, let c = checkedCloud else { return }
            localChange = l
            cloudChange = c
            if localChange == .unchanged && cloudChange == .unchanged {
                // Confirmed; once the tick has surely passed the doubt is gone for good.
                if let lm = views[.local]![path], let cm = views[.cloud]![path],
                   namer.wallTime - WallInstant(mtime: lm.mtime) >= BaseEntry.ambiguityWindow {
                    records.append(.record(path, local: lm, cloud: cm, hash: entry.hash))
                }
                return
            }
        }
        switch (localChange.isChange, cloudChange.isChange) {
        case (false, false):
            // Invariant: both sides are as synced. Nothing to do.
            return
        case (true, false):
            // Invariant: only the local side changed; the cloud holds the base (or nothing).
            propagate(path, from: .local, change: localChange, source: l, destination: c)
        case (false, true):
            propagate(path, from: .cloud, change: cloudChange, source: c, destination: l)
        case (true, true):
            reconcileBothChanged(path, entry: entry, local: l, cloud: c)
        }
    }

    /// For an ambiguous base, an "unchanged" side is checked against the recorded hash.
    /// Nil when the hash is not known yet (requested in the plan).
    mutating func verified(_ path: RelativePath, _ side: Side, _ change: Change, _ entry: BaseEntry) -> Change? {
        guard change == .unchanged else { return change }
        let onDisk = origin(path, on: side)
        guard let hash = side == .local ? hashes.local[onDisk] : hashes.cloud[onDisk] else {
            plan.needsHashes.insert(SidePath(side, onDisk))
            return nil
        }
        return hash == entry.hash ? .unchanged : .modified
    }

    /// `source` changed on `side`; `destination` on the other side is still the base.
    mutating func propagate(_ path: RelativePath, from side: Side, change: Change,
                            source: FileMetadata?, destination: FileMetadata?) {
        let other = side.other
        guard let source else {
            // Deleted on `side`. Invariant: the other side still holds the base entry.
            guard let destination else { return }
            if destination.kind == .directory && changedBelow[other]!.contains(path) {
                // Something inside changed on the other side: keep the directory, bring it back.
                creations.append(.makeDirectory(path, on: side, source: destination))
            } else {
                deletions.append(destination.kind == .directory
                    ? .removeDirectory(path, on: other, expected: destination)
                    : .remove(path, on: other, expected: destination))
            }
            return
        }
        if change == .attributes, let destination {
            creations.append(.setMode(path, on: other, source: source, expected: destination))
            return
        }
        if let destination, destination.kind == .directory, source.kind != .directory,
           changedBelow[other]!.contains(path) {
            // A folder replaced here by a file, while something inside it changed there:
            // a conflict, not a deletion of that change.
            let (l, c) = side == .local ? (source, destination) : (destination, source)
            keepBoth(path, local: l, cloud: c)
            return
        }
        create(path, on: other, from: source, replacing: destination)
    }

    /// Puts `source`'s kind of entry at `path` on `side`, replacing what is there.
    mutating func create(_ path: RelativePath, on side: Side, from source: FileMetadata,
                         replacing existing: FileMetadata?) {
        var replacing = existing
        if let existing, existing.kind == .directory || source.kind == .directory || existing.kind == .special {
            if existing.kind == source.kind {
                // Directory replaced by another directory: only attributes can differ.
                if existing.mode != source.mode {
                    creations.append(.setMode(path, on: side, source: source, expected: existing))
                } else {
                    let pair = side == .local ? (existing, source) : (source, existing)
                    records.append(.record(path, local: pair.0, cloud: pair.1, hash: nil))
                }
                return
            }
            // A kind change: the old entry goes first (a directory's children are deleted by
            // their own actions before it), then the new one is created.
            deletions.append(existing.kind == .directory
                ? .removeDirectory(path, on: side, expected: existing)
                : .remove(path, on: side, expected: existing))
            replacing = nil
        }
        switch source.kind {
        case .directory: creations.append(.makeDirectory(path, on: side, source: source))
        case .file:
            if let r = replacing, r.kind != .file {
                deletions.append(.remove(path, on: side, expected: r))
                replacing = nil
            }
            creations.append(.copy(path, to: side, source: source, replacing: replacing))
        case .symlink: creations.append(.makeSymlink(path, on: side, source: source, replacing: replacing))
        case .special: plan.skipped.append(path)
        }
    }
}

/// Per side, the paths whose current entry is not exactly the base's (created, deleted, or
/// any metadata changed). Found once per pass with one lookup per entry, so that the rename,
/// folder and per-path passes look at these few paths rather than at the whole tree.
struct Differences {
    var local: [RelativePath] = []
    var cloud: [RelativePath] = []

    subscript(side: Side) -> [RelativePath] { side == .local ? local : cloud }

    init(base: [RelativePath: BaseEntry], local: [RelativePath: FileMetadata], cloud: [RelativePath: FileMetadata]) {
        for (path, entry) in base {
            if local[path] != entry.local { self.local.append(path) }
            if cloud[path] != entry.cloud { self.cloud.append(path) }
        }
        for (path, _) in local where base[path] == nil { self.local.append(path) }
        for (path, _) in cloud where base[path] == nil { self.cloud.append(path) }
    }
}
