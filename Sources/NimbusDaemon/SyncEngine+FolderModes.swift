import NimbusCore
import NimbusSystem
import NimbusVocabulary

// Folders the user made read-only (`chmod 555 photos/2019`, an unpacked archive, a Go module
// cache, `cp -a` of a read-only tree) sync like any other. nimbusd runs as the user, without
// CAP_DAC_OVERRIDE: a folder lacking its owner's write or search bit cannot take a new entry,
// lose one or have one renamed in it, not even by its owner. So, as Syncthing does, Nimbus
// adds the owner's write and search bits while it works in such a folder and sets the exact
// mode back once it is done:
//
// - a folder it makes (or whose mode it changes to such a mode) gets the bits while it is
//   filled, and its exact mode once its contents are in, deepest first, after the batch is
//   installed and the folders' times aligned; only then is the folder recorded, so a crash
//   before leaves no base for it and the next pass aligns the modes again (of two folders
//   without a base that differ only in the owner's write and search bits, the narrower mode
//   wins, whichever side Nimbus made its folder on: `Reconciler.isNarrowerFolder`);
// - an existing folder that an action writes into (a deletion, a rename, a download, a new
//   folder) gets the bits for that action only and its mode back right after it, or, when the
//   action is a copy waiting in the batch, once the batch is installed.
//
// The mode set back is the one the folder had (or was to have); a folder whose mode someone
// else changed meanwhile is left as they set it. It is durable before anything relies on it
// (the journal's commit that records a folder made, the note below).
//
// A crash while a recorded folder is lent must not leave the lent mode to be taken for a
// change of the user's, which the next pass would propagate: such a folder is noted in the
// state directory (`LentMode`, `RecordStore.noteLentModes`) before its bits are added, until
// its mode set back is durable, and a start sets back the mode of every folder noted that
// still has exactly the mode Nimbus gave it (`restoreLentModes`). A folder made by the plan
// is not noted: it has no record until its mode is set, and the crash is covered by the rule
// for folders without a base (`Reconciler.isNarrowerFolder`). Where the bits cannot be added (the folder
// belongs to another user), the action fails as before, with the permission error that names
// the folder (`SyncEngine.explain`).
//
// Downloads, evictions and conflicts settled outside a pass (`nimbusctl download`, `evict`,
// the cache budget, `resolve`) lend themselves the folders the same way, for that file only (`withFoldersLent`).
//
// The root folders are left alone: a read-only sync root is a choice about the whole pair.

/// The folders of one plan's execution that Nimbus made writable for its work.
struct FolderModes {
    /// A folder given the owner's write and search bits, and what to do when done with it.
    struct Lent {
        /// The mode it must end with.
        var mode: UInt32
        /// The mode Nimbus gave it (`mode` plus the bits): set back only while it still has it.
        var working: UInt32
        /// The other side's entry, for a folder made or changed by the plan: recorded once its
        /// mode is set. Nil for a folder that was there and stays as recorded.
        var source: FileMetadata?
        /// Kept until the end of the execution (its contents are still to come).
        var isHeld: Bool
    }

    /// The owner's write and search bits.
    static let ownerBits: UInt32 = 0o300

    static func working(_ mode: UInt32) -> UInt32 { mode | ownerBits }

    private(set) var lent: [SidePath: Lent] = [:]
    /// The entries the note of lent modes must hold (`SyncEngine+LentModes`), and what it
    /// held when last written.
    var noted: [SidePath: LentMode] = [:]
    var written: [SidePath: LentMode] = [:]
    /// Those of `lent` not held: given back after the action that needed them.
    private var unheld: Set<SidePath> = []
    /// Folders known to have the bits already in this execution (looked at once each).
    private var writable: Set<SidePath> = []
    /// Folders given back during the execution, their modes not flushed yet: they stay in the
    /// note until the flush at its end (`giveFoldersBack(all: true)`), so that lending one
    /// again for the next action writes no note.
    var awaitingFlush: Set<SidePath> = []

    mutating func lend(_ folder: SidePath, _ lent: Lent) {
        self.lent[folder] = lent
        if lent.isHeld { unheld.remove(folder) } else { unheld.insert(folder) }
        writable.insert(folder)
    }

    func isKnownWritable(_ folder: SidePath) -> Bool { writable.contains(folder) }

    mutating func noteWritable(_ folder: SidePath) { writable.insert(folder) }

    /// Keeps every folder lent so far until the end of the execution.
    mutating func holdAll() {
        for folder in unheld { lent[folder]?.isHeld = true }
        unheld = []
    }

    /// Takes the folders to give back now: those not held, or all of them; deepest first.
    mutating func takeBack(all: Bool) -> [(folder: SidePath, lent: Lent)] {
        // After nearly every action nothing is lent but held folders: no need to look at them.
        guard all || !unheld.isEmpty else { return [] }
        let due = (all ? lent : lent.filter { unheld.contains($0.key) }).sorted { $0.key.path.depth > $1.key.path.depth }
        for (folder, _) in due {
            lent[folder] = nil
            writable.remove(folder)
        }
        unheld = []
        return due.map { ($0.key, $0.value) }
    }

    /// A folder renamed on `side`: what was lent beneath `from` is now beneath `to`.
    mutating func moved(from: RelativePath, to: RelativePath, on side: Side) {
        for (folder, entry) in lent where folder.side == side {
            guard let moved = folder.path.rebased(from: from, to: to) else { continue }
            lent[folder] = nil
            lent[SidePath(side, moved)] = entry
            if unheld.remove(folder) != nil { unheld.insert(SidePath(side, moved)) }
        }
        for (entry, note) in noted where entry.side == side {
            guard let moved = entry.path.rebased(from: from, to: to) else { continue }
            noted[entry] = nil
            noted[SidePath(side, moved)] = LentMode(side: side, path: moved, inode: note.inode, mode: note.mode, working: note.working)
        }
        writable = writable.filter { $0.side != side || from.relative($0.path) == nil }
        awaitingFlush = Set(awaitingFlush.map { folder in
            folder.side == side ? folder.path.rebased(from: from, to: to).map { SidePath(side, $0) } ?? folder : folder
        })
    }
}

extension SyncEngine {
    /// Gives the folders `action` writes into the owner's write and search bits, for the
    /// action (`holdAll` keeps them until the end of the execution).
    func lendFolders(for action: Action) throws {
        guard let side = action.side else { return }
        switch action {
        case .setMode, .record, .forget, .rebase:
            return  // Changes no folder's entries.
        default:
            try lend(action.lockedPaths.map(\.parent), on: side)
        }
    }

    private func lend(_ folders: [RelativePath], on side: Side) throws {
        for folder in Set(folders) where !folder.isRoot {
            try lend(SidePath(side, folder))
        }
    }

    /// A folder moved to another parent has its `..` entry rewritten: it must be writable too.
    /// Lent once the rename's expectation is checked (its mode is part of it), for the action.
    func lendMovedFolder(_ from: RelativePath, to: RelativePath, on side: Side, expected: FileMetadata) throws {
        guard from.parent != to.parent && expected.kind == .directory else { return }
        try lend(SidePath(side, from))
    }

    private func lend(_ folder: SidePath) throws {
        if folderModes.withLock({ $0.isKnownWritable(folder) }) { return }
        let fs = system(folder.side)
        guard let current = try fs.metadata(of: folder.path), current.kind == .directory else { return }
        let working = FolderModes.working(current.mode)
        guard working != current.mode else {
            folderModes.withLock { $0.noteWritable(folder) }
            return
        }
        try noteLent([LentMode(side: folder.side, path: folder.path, inode: current.inode, mode: current.mode, working: working)])
        // Only if it still has the mode read above: a chmod of the user's meanwhile (the note
        // was written in between) is theirs, and the action's expectations no longer hold.
        guard try fs.changeMode(folder.path, inode: current.inode, from: current.mode, to: working, durable: false) else {
            noteReturned([folder])
            throw ChangedSincePlanned(path: folder.path, side: folder.side)
        }
        log.debug("\(folder.path) in the \(folder.side) folder is made writable while it is synced (mode \(octalMode(current.mode)))")
        folderModes.withLock {
            $0.lend(folder, FolderModes.Lent(mode: current.mode, working: working, source: nil, isHeld: false))
        }
    }

    /// Runs `body`, an action taken outside a plan's execution (a download or an eviction a
    /// person or the cache budget asked for), with the folders `action` writes into lent the
    /// owner's bits, and given back right after.
    func withFoldersLent<Result>(for action: Action, _ body: () throws -> Result) throws -> Result {
        defer { giveFoldersBack(all: false) }  // Also those lent before one that could not be.
        try lendFolders(for: action)
        return try body()
    }

    /// `withFoldersLent`, for changes to the entries of `folders` on both sides (settling a conflict).
    func withFoldersLent<Result>(_ folders: [RelativePath], _ body: () throws -> Result) throws -> Result {
        defer { giveFoldersBack(all: false) }  // Also those lent on one side when the other fails.
        for side in Side.allCases { try lend(folders, on: side) }
        return try body()
    }

    /// Makes the folder `path` on `side` for `source`: with the owner's write and search bits
    /// when its mode lacks them (its exact mode set at the end, `giveFoldersBack`). Returns
    /// whether it got its exact mode now (and may be recorded at once).
    func makeFolder(_ path: RelativePath, on side: Side, at location: RelativePath? = nil, source: FileMetadata) throws -> Bool {
        let working = FolderModes.working(source.mode)
        try system(side).makeDirectory(location ?? path, mode: working)
        // Made in place: its creation, and what the watcher finds in it, are this engine's own.
        if location == nil { expectEchoes(of: [path], on: side) }
        let folder = SidePath(side, path)
        guard working != source.mode else {
            folderModes.withLock { $0.noteWritable(folder) }
            return true
        }
        folderModes.withLock { $0.lend(folder, FolderModes.Lent(mode: source.mode, working: working, source: source, isHeld: true)) }
        return false
    }

    /// Sets a folder's mode to `source.mode` for a `.setMode`: at once when the mode keeps the
    /// owner's bits (or the folder was not lent), else at the end, as for a folder made.
    /// Returns whether it was set now.
    func setFolderMode(_ path: RelativePath, on side: Side, source: FileMetadata, expected: FileMetadata) throws -> Bool {
        let folder = SidePath(side, path)
        let working = FolderModes.working(source.mode)
        let wasLent = folderModes.withLock { $0.lent[folder] != nil }
        guard working != source.mode || wasLent else { return false }
        try noteLent([LentMode(side: side, path: path, inode: expected.inode, mode: source.mode, working: working)])
        guard try system(side).changeMode(path, inode: expected.inode, from: expected.mode, to: working, durable: false) else {
            noteReturned([folder])
            throw ChangedSincePlanned(path: path, side: side)
        }
        folderModes.withLock { $0.lend(folder, FolderModes.Lent(mode: source.mode, working: working, source: source, isHeld: true)) }
        return true
    }

    /// Sets back the modes of the folders lent (all of them at the end of an execution, else
    /// those not held), deepest first, durably (one flush per filesystem for several), then
    /// records the folders the plan made or changed and drops them from the note.
    ///
    /// `flushingLater` (after each action of an execution): the modes are set back but not
    /// flushed, and the folders stay in the note, until the end of the execution flushes them
    /// all at once. A pass of 1 000 renames in a read-only folder wrote and removed the note
    /// and fsynced the folder for each (four fsyncs a rename); now the note is written once
    /// per folder and removed once per pass. The crash argument is the note's
    /// (`SyncEngine+LentModes`): a folder leaves it only once its mode is durable.
    func giveFoldersBack(all: Bool, flushingLater: Bool = false) {
        let due = folderModes.withLock { $0.takeBack(all: all) }
        let earlier: Set<SidePath> = all ? folderModes.withLock { modes in
            defer { modes.awaitingFlush = [] }
            return modes.awaitingFlush
        } : []
        guard !due.isEmpty || !earlier.isEmpty else { return }
        // A single folder is made durable by its own fsync; several, by one flush per filesystem.
        let eachDurable = due.count == 1 && earlier.isEmpty && !flushingLater
        var done: [(folder: SidePath, lent: FolderModes.Lent)] = []
        var settled: [SidePath] = []
        for (folder, lent) in due {
            let fs = system(folder.side)
            do {
                // Read and set through one descriptor (`FileSystem.changeMode`): a mode the user
                // set after the read would otherwise be overwritten by the one put back.
                guard let current = try fs.metadata(of: folder.path), current.kind == .directory,
                      try fs.changeMode(folder.path, inode: current.inode, from: lent.working, to: lent.mode, durable: eachDurable) else {
                    log.info("\(folder.path) in the \(folder.side) folder changed while it was synced; its mode is left as it is")
                    settled.append(folder)
                    continue
                }
                done.append((folder, lent))
            } catch {
                cannotGiveBack(folder, lent.mode, error)
            }
        }
        if flushingLater {
            folderModes.withLock { $0.awaitingFlush.formUnion(done.map(\.folder)) }
            return noteReturned(settled)
        }
        let unflushed = eachDurable ? [:] : flush(Set(done.map(\.folder.side)).union(earlier.map(\.side)))
        for folder in earlier {
            if let error = unflushed[folder.side] {
                log.error("cannot flush the \(folder.side) folder after setting back the mode of \(folder.path): \(error); "
                    + "it is set back again at the next start if it is still as lent")
            } else {
                settled.append(folder)
            }
        }
        for (folder, lent) in done {
            if let error = unflushed[folder.side] {
                cannotGiveBack(folder, lent.mode, error)
                continue
            }
            settled.append(folder)
            do {
                if let source = lent.source { try recordWrite(folder.path, on: folder.side, source: source) }
            } catch {
                log.error("cannot record \(folder.path) in the \(folder.side) folder: \(error)")
                scheduleRetry(folder.path, error: "\(error)")
            }
        }
        noteReturned(settled)
    }

    /// A mode that could not be set back (or made durable): the folder stays in the note, so
    /// that the next start sets it back if it is still as lent.
    private func cannotGiveBack(_ folder: SidePath, _ mode: UInt32, _ error: any Error) {
        let message = "cannot set the mode of \(folder.path) in the \(folder.side) folder back to \(octalMode(mode)): \(error)"
        log.error(message)
        scheduleRetry(folder.path, error: message)
    }
}
