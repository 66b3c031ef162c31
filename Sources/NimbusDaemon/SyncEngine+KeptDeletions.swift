import NimbusCore
import NimbusSystem
import NimbusVocabulary

// What a deletion applied by a sync removed stays recoverable for the mass-delete guard's
// window (DESIGN §3), so that `revert-deletes` undoes a mass deletion as a whole, including
// the part applied before the guard tripped (an `rm` the event batcher handed over in two
// batches, the first under the limit):
// - a cloud file goes to the versions store, as every deleted cloud file does; a revert moves
//   it back;
// - a local file, once checked unchanged and not open (`removeGuarded`), is moved into the
//   holding folder `.nimbus-tmp-deleted` at the root of the local folder, under its own path,
//   instead of being unlinked (in `.nimbus-tmp-deleted-2`, … `-8` when a name there is taken
//   by the other kind, and past those in a folder of its own, `.nimbus-tmp-deleted-more/N`;
//   each folder in it has the mode of the folder it stands for, which a revert gives back). A temporary name: the scans, the watcher and the ignore rules
//   pass over it, so it is never uploaded. It is let go (unlinked, its folders removed)
//   once the window has passed with nothing held on that side, or at `confirm-deletes`;
//   while deletions are held there, it stays until the user decides. So the disk space of
//   what a sync deleted is given back at most a window later.
// - A crash inside the window leaves the kept files in the holding folder: the start-up
//   sweep of temporaries leaves them alone (their own names are not temporary ones), and
//   `adoptKeptDeletions` counts them as deletions applied just now, so the guard still sees
//   them, a revert still brings them back, and otherwise they go a window later. Which
//   cloud files went to the versions store is not remembered across a restart:
//   `nimbusctl restore` brings those back one by one.

extension RootMarkers {
    /// Where local files a sync deleted wait out the mass-delete guard's window.
    static let deletedHolding = try! RelativePath(validating: ".nimbus-tmp-deleted")

    /// How many numbered holding folders there are: `.nimbus-tmp-deleted`, then `-2`, `-3`…
    /// A file kept as `x` and files kept as `x/…` (a file and a folder of one name, deleted
    /// one after the other within the window) cannot share one: a kept file `a`, then `a/a`,
    /// then `a/a/a`… (each name a file, then a folder) takes one more each time. They are
    /// looked for by name at start, so there is a fixed number of them; what none has room
    /// for goes to a folder of its own in `deletedSpill` (rare, and never unlinked).
    static let deletedHoldingCount = 8

    /// Where a kept file goes when every numbered holding folder has a name on its way taken:
    /// `.nimbus-tmp-deleted-more/N/PATH`, N a folder made for it alone (so nothing in it can
    /// be in the way), listed at start.
    static let deletedSpill = try! RelativePath(validating: ".nimbus-tmp-deleted-more")

    /// The holding folder number `number` (from 1).
    static func deletedHolding(_ number: Int) -> RelativePath {
        number == 1 ? deletedHolding : try! RelativePath(validating: ".nimbus-tmp-deleted-\(number)")
    }

    /// The holding folder `place` is in (`.nimbus-tmp-deleted-more/N` for one in the spill,
    /// the spill itself for the spill).
    static func deletedHolding(containing place: RelativePath) -> RelativePath? {
        if deletedSpill.contains(place) {
            return place.components.count > 1 ? try! deletedSpill.appending(name: Array(place.components[1])) : deletedSpill
        }
        return (1...deletedHoldingCount).lazy.map(deletedHolding).first { $0.contains(place) }
    }
}

extension SyncEngine {
    /// Carries out a planned deletion of the file at `path` on `side` (`expected` as planned),
    /// keeping its content for the window; returns where.
    func removeKeepingContent(_ path: RelativePath, on side: Side, expected: FileMetadata) throws -> KeptContent {
        switch side {
        case .cloud:
            return .cloudVersion(at: try moveToVersions(path, filedUnder: path, expected: expected), size: expected.size)
        case .local:
            return try removeLocalFile(path, expected: expected, keeping: true).map { .localFile(at: $0) } ?? .nothing
        }
    }

    /// Moves the checked file at `aside` (which was `path`) to its path in the first holding
    /// folder with room for it (see `deletedHoldingCount`), or past those to a new folder in
    /// the spill, and returns where. Nil when it cannot be kept (the disk refusing): it is
    /// then removed, as it was before the guard kept anything.
    func keepRemoved(_ aside: RelativePath, of path: RelativePath) -> RelativePath? {
        var holding = RootMarkers.deletedHolding
        do {
            for number in 1...RootMarkers.deletedHoldingCount {
                holding = RootMarkers.deletedHolding(number)
                let place = holding.appending(path)
                do {
                    try keep(aside, at: place, in: holding)
                    return place
                } catch where isNameTaken(place, in: holding) {
                    continue
                }
            }
            // A folder made for it alone has nothing in the way: only the disk can refuse.
            holding = try newSpillFolder()
            let place = holding.appending(path)
            try keep(aside, at: place, in: holding)
            return place
        } catch {
            log.warning("could not keep \(path) in \(holding) while the mass-delete guard may still undo its deletion (\(error)); it is removed")
            return nil
        }
    }

    /// A new, empty folder `.nimbus-tmp-deleted-more/N` (the first N not there), owner only.
    private func newSpillFolder() throws -> RelativePath {
        let spill = RootMarkers.deletedSpill
        if try local.metadata(of: spill) == nil {
            do { try local.makeDirectory(spill, mode: 0o700) } catch let e as SystemError where e.errno == .fileExists {}
        }
        // Ends: each number tried is a folder already there, and there are finitely many.
        for number in 1... {
            let folder = try spill.appending(name: Array(String(number).utf8))
            do {
                try local.makeDirectory(folder, mode: 0o700)
                return folder
            } catch let error as SystemError where error.errno == .fileExists {
                continue
            }
        }
        fatalError("unreachable")
    }

    private func keep(_ aside: RelativePath, at place: RelativePath, in holding: RelativePath) throws {
        // Only the owner may go in: a file kept there must not become readable through it
        // when the folder it came from was closed to others.
        if try local.metadata(of: holding) == nil {
            try local.makeDirectory(holding, mode: 0o700)
        }
        // Each folder in it has the mode of the folder it stands for, which a revert after a
        // restart gives back (owner rwx added, so that Nimbus can work in it).
        try makeLocalFolders(place.parent, extraMode: 0o700) { holding.relative($0) ?? $0 }
        do {
            try local.rename(aside, to: place, replacing: false)
        } catch let error as SystemError where error.errno == .fileExists {
            // The same path deleted again within the window: the later deletion is the
            // one a revert brings back.
            guard try local.metadata(of: place)?.kind != .directory else { throw error }
            try local.removeFile(place)
            state.withLock { $0.appliedDeletions.forget(keptAt: .localFile(at: place)) }
            try local.rename(aside, to: place, replacing: false)
        }
    }

    /// Whether `place` cannot be had in `holding` because a name on the way is taken by the
    /// other kind: a file where a folder is needed, or a folder at `place` itself.
    private func isNameTaken(_ place: RelativePath, in holding: RelativePath) -> Bool {
        if (try? local.metadata(of: place))?.kind == .directory { return true }
        var folder = place.parent
        while holding.contains(folder) {
            if let kind = (try? local.metadata(of: folder))?.kind, kind != .directory { return true }
            folder = folder.parent
        }
        return false
    }

    /// Makes the missing folders down to `folder` in the local folder, each with the mode
    /// (plus `extraMode`) of the folder `model` names for it when that is one, else 0755.
    func makeLocalFolders(_ folder: RelativePath, extraMode: UInt32 = 0,
                          modelledOn model: (RelativePath) -> RelativePath) throws {
        if try folder.isRoot || local.metadata(of: folder)?.kind == .directory { return }
        try makeLocalFolders(folder.parent, extraMode: extraMode, modelledOn: model)
        let original = try local.metadata(of: model(folder))
        let mode = original.flatMap { $0.kind == .directory ? $0.mode | extraMode : nil } ?? 0o755
        do { try local.makeDirectory(folder, mode: mode) } catch let e as SystemError where e.errno == .fileExists {}
    }

    /// When the next kept local file is due to go (nil: none, or only held ones).
    public var nextKeptRelease: MonotonicInstant? {
        state.withLock { s in
            s.appliedDeletions.nextRelease(window: Self.deletionWindow, holding: s.holdingSides)
        }
    }

    /// Lets go of what the deletions applied more than a window ago kept, on the sides with
    /// nothing held: they no longer count toward the guard, and a revert no longer undoes them.
    public func releaseExpiredDeletions() {
        checkOwner()
        let now = clock.monotonicNow
        let expired = state.withLock { s in
            s.appliedDeletions.expire(now: now, window: Self.deletionWindow, holding: s.holdingSides)
        }
        letGo(expired)
    }

    /// Removes the kept local files of `deletions`, and the folders of the holding place they
    /// leave empty. A cloud file stays in the versions store, like any deleted one.
    func letGo(_ deletions: [AppliedDeletion]) {
        var folders = Set<RelativePath>()
        for deletion in deletions {
            guard case .localFile(let place) = deletion.kept else { continue }
            do {
                try local.removeFile(place)
            } catch let error as SystemError where error.errno == .noSuchFile {
            } catch {
                log.warning("could not remove \(place) from the local folder: \(error)")
            }
            guard let holding = RootMarkers.deletedHolding(containing: place) else { continue }
            var folder = place.parent
            while holding.contains(folder), folders.insert(folder).inserted { folder = folder.parent }
        }
        for folder in folders.sorted(by: { $0.depth > $1.depth }) { try? local.removeDirectory(folder) }
        if folders.contains(where: RootMarkers.deletedSpill.contains) { try? local.removeDirectory(RootMarkers.deletedSpill) }
    }

    /// At start: the files a crash left in the holding folders count as deletions applied
    /// now (see the top of this file); their empty folders go.
    func adoptKeptDeletions() {
        for number in 1...RootMarkers.deletedHoldingCount { adoptKeptDeletions(in: RootMarkers.deletedHolding(number)) }
        let spill = RootMarkers.deletedSpill
        guard let found = try? local.metadata(of: spill), found.kind == .directory else { return }
        do {
            for (folder, metadata) in try local.scan(spill, descend: { _ in false }).entries where metadata.kind == .directory {
                adoptKeptDeletions(in: folder)
            }
            try? local.removeDirectory(spill)
        } catch {
            log.warning("could not look at \(spill) in the local folder: \(error)")
        }
    }

    private func adoptKeptDeletions(in holding: RelativePath) {
        guard let folder = try? local.metadata(of: holding), folder.kind == .directory else { return }
        let now = clock.monotonicNow
        do {
            let entries = try local.scan(holding, descend: { _ in true }).entries
            var adopted: [AppliedDeletion] = []
            for (place, metadata) in entries where metadata.kind != .directory {
                guard let path = holding.relative(place), !path.isRoot else { continue }
                adopted.append(AppliedDeletion(path: path, side: .local, at: now, kept: .localFile(at: place)))
            }
            state.withLock { s in adopted.forEach { s.appliedDeletions.append($0) } }
            for (path, metadata) in entries.reversed() where metadata.kind == .directory { try? local.removeDirectory(path) }
            try? local.removeDirectory(holding)
            if !adopted.isEmpty {
                let seconds = Int(Self.deletionWindow.components.seconds)
                log.notice("\(adopted.count) file(s) a sync deleted from the local folder just before nimbusd stopped are kept in \(holding) for \(seconds) s more: if the mass-delete guard holds the rest of that deletion, 'nimbusctl revert-deletes' brings them back too")
            }
        } catch {
            log.warning("could not look at \(holding) in the local folder: \(error)")
        }
    }
}
