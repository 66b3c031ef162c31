import NimbusCore
import NimbusVocabulary

/// The note of the entries lent their owner's bits (`LentMode`, kept by the `RecordStore` in
/// the state directory): written before an entry gets the bits, rewritten once its mode set
/// back is durable, read at start. Between the two, a crash leaves the entry in the note,
/// and the next start sets its mode back, before anything is scanned.
///
/// Why nothing else is needed: an entry has the lent mode only after the note holds it (the
/// note is durable before the chmod), and leaves the note only once its own mode is durable
/// again (`FileSystem.setModeDurably`, or a flush), so after a crash at any step it either
/// has its own mode or is in the note. The start sets it back only if it is still the entry
/// lent (its inode) and still has exactly the mode Nimbus gave it: a mode that its owner set
/// meanwhile, even the same bits the other way round, is theirs, and is left alone.
extension SyncEngine {
    /// Adds `entries` to the note, durably. Throws when the note cannot be written: the
    /// caller must not lend them then (the action fails, as it would without the bits).
    func noteLent(_ entries: [LentMode]) throws {
        checkOwner()  // The note is the store's, written from the engine thread only.
        let (written, wanted) = folderModes.withLock { modes in
            (modes.written, entries.reduce(into: modes.noted) { $0[$1.sidePath] = $1 })
        }
        if wanted != written { try store.noteLentModes(Self.ordered(wanted)) }
        folderModes.withLock {
            $0.noted = wanted
            $0.written = wanted
        }
    }

    /// Before the rename of `from` to `to` on `side`: what is noted beneath `from` is noted
    /// beneath `to` too, so the note covers it whether or not the rename survives a crash.
    func noteMove(_ from: RelativePath, to: RelativePath, on side: Side) throws {
        let moved = folderModes.withLock { modes in
            modes.noted.values.compactMap { entry -> LentMode? in
                guard entry.side == side, let path = entry.path.rebased(from: from, to: to) else { return nil }
                return LentMode(side: side, path: path, inode: entry.inode, mode: entry.mode, working: entry.working)
            }
        }
        try noteLent(moved)
    }

    /// Drops `entries` from the note once their modes are durably theirs again (or were left
    /// to whoever changed them), and the names a rename left behind (`FolderModes.moved`). A
    /// note that cannot be written is written with the next change: an entry left in it is
    /// set back at the next start only if it has exactly the lent mode then.
    func noteReturned(_ entries: [SidePath]) {
        checkOwner()  // The note is the store's, written from the engine thread only.
        let (written, wanted) = folderModes.withLock { modes -> ([SidePath: LentMode], [SidePath: LentMode]) in
            for entry in entries { modes.noted[entry] = nil }
            return (modes.written, modes.noted)
        }
        guard wanted != written else { return }
        do {
            try store.noteLentModes(Self.ordered(wanted))
            folderModes.withLock { $0.written = wanted }
        } catch {
            log.error("cannot write the note of lent modes: \(error)")
        }
    }

    /// At start, before anything is scanned: sets back the mode of every entry a crash left
    /// lent, if it is still the entry lent and has exactly the mode Nimbus gave it.
    func restoreLentModes() {
        let entries: [LentMode]
        do {
            entries = try store.lentModes()
        } catch {
            log.error("\(error); folders or files that Nimbus had made writable for its work when it stopped may keep their owner's write bit")
            return
        }
        var kept: [LentMode] = []
        for entry in entries {
            let fs = system(entry.side)
            do {
                guard try fs.changeMode(entry.path, inode: entry.inode, from: entry.working, to: entry.mode, durable: true) else {
                    log.info("\(entry.path) in the \(entry.side) folder changed since Nimbus lent it its owner's bits; its mode is left as it is")
                    continue
                }
                log.notice("\(entry.path) in the \(entry.side) folder has its mode \(octalMode(entry.mode)) again: Nimbus had made it "
                    + "\(octalMode(entry.working)) for its work, and stopped before it could set it back")
            } catch {
                log.error("cannot set the mode of \(entry.path) in the \(entry.side) folder back to \(octalMode(entry.mode)): \(error); tried again at the next start")
                kept.append(entry)
            }
        }
        let wanted = Dictionary(kept.map { ($0.sidePath, $0) }, uniquingKeysWith: { first, _ in first })
        folderModes.withLock {
            $0.noted = wanted
            $0.written = entries.isEmpty ? [:] : Dictionary(entries.map { ($0.sidePath, $0) }, uniquingKeysWith: { first, _ in first })
        }
        noteReturned([])
    }

    /// A stable order, so the same set is written the same way.
    private static func ordered(_ entries: [SidePath: LentMode]) -> [LentMode] {
        entries.values.sorted { ($0.side.rawValue, $0.path) < ($1.side.rawValue, $1.path) }
    }
}
