import NimbusCore
import NimbusSystem
import NimbusVocabulary

// The state of each local file is written to its `user.nimbus.state` xattr, for scripts and
// file managers (DESIGN §2). nimbusd runs as the user, and Linux lets a process without
// CAP_FOWNER write a `user.*` xattr only to a file it may write: a read-only file of the user
// (`chmod 444`, a Go module cache, an unpacked archive, a download whose cloud file is 0444)
// refuses the mark with EACCES. As for read-only folders (`SyncEngine+FolderModes`), Nimbus
// lends such a file its owner's write bit for the setxattr and sets its exact mode back:
//
// - the file is noted first (`SyncEngine+LentModes`), and leaves the note only once its mode
//   set back is durable, so a crash in between never leaves the lent mode (0644 for 0444) to
//   be taken for the user's change: the next start sets it back;
// - the mode is set back only while the file is the one lent (its inode) and has exactly
//   the mode Nimbus gave it: a mode the user set meanwhile is left as they set it;
// - neither the bit nor the mark is a change to a pass: the mode ends as it was, the mtime
//   is untouched, and the ctime both move is not part of what a pass compares (`FileMetadata`);
// - the marks written together after a pass (`writePendingMarks`) share one note and one
//   flush, so a read-only tree costs a few flushes, not a few per file;
// - a download's temporary file, not yet the user's, is lent the bit without a note (a crash
//   leaves only a temporary, removed at the next start); its mode set back is durable with
//   the copy (`markTemporary`).
//
// A file that belongs to another user cannot be lent the bit: it stays without its mark, as
// before (logged at debug level), and `nimbusctl status PATH` still says its state.
extension SyncEngine {
    /// Writes `state` to the mark of a local file. Best effort: a filesystem without user
    /// xattrs is remembered and not asked again. The value is read first, so that an unchanged
    /// state changes nothing (no ctime, no `IN_ATTRIB`), unless the caller knows the file has
    /// none (`isUnmarked`: a file new to the journal) and the read would only cost a system call.
    func markState(_ fileState: FileState, of path: RelativePath, isUnmarked: Bool = false) {
        markStates([(path, fileState, isUnmarked)])
    }

    /// `markState` for several files; the read-only ones among them are lent the write bit
    /// together. Returns the files whose mark was written with a single setxattr, which
    /// inotify reports back (`SyncEngine+Echoes`).
    @discardableResult
    func markStates(_ marks: [(path: RelativePath, state: FileState, isUnmarked: Bool)]) -> [RelativePath] {
        var readOnly: [(file: FileMetadata, path: RelativePath, value: [UInt8])] = []
        var written: [RelativePath] = []
        for mark in marks {
            let value = Array(mark.state.name.utf8)
            switch writeMark(value, of: mark.path, isUnmarked: mark.isUnmarked) {
            case .written: written.append(mark.path)
            case .needsTheWriteBit(let file): readOnly.append((file, mark.path, value))
            case .notWritten: break
            }
        }
        if !readOnly.isEmpty { markLendingTheWriteBit(readOnly) }
        return written
    }

    /// Marks a download's temporary file `downloaded` before it takes its name. A read-only one
    /// gets the write bit for the setxattr and its mode back durably when `durable` (a copy
    /// installed on its own), else with the batch's flush of the names. Throws when its mode
    /// cannot be set back: the copy must not be installed with the lent mode.
    func markTemporary(_ temporary: RelativePath, durable: Bool) throws {
        let value = Array(FileState.downloaded.name.utf8)
        guard case .needsTheWriteBit(let file) = writeMark(value, of: temporary, isUnmarked: true) else { return }
        do {
            try local.setAttributes(temporary, mode: Self.writable(file.mode), mtime: nil)
            try local.setExtendedAttribute(Placeholder.stateAttribute, of: temporary, to: value)
        } catch {
            log.debug("cannot write \(Placeholder.stateAttribute) of \(temporary): \(error)")
        }
        if durable {
            try local.setModeDurably(temporary, to: file.mode)
        } else {
            try local.setAttributes(temporary, mode: file.mode, mtime: nil)
        }
    }

    static func writable(_ mode: UInt32) -> UInt32 { mode | 0o200 }

    private enum MarkOutcome {
        case written
        /// Refused for want of its owner's write bit (a regular file without it), for the
        /// caller to lend it the bit.
        case needsTheWriteBit(FileMetadata)
        /// There already, or another failure (logged).
        case notWritten
    }

    /// Writes the mark unless it is there already.
    private func writeMark(_ value: [UInt8], of path: RelativePath, isUnmarked: Bool) -> MarkOutcome {
        guard attributesSupported.load(ordering: .relaxed) else { return .notWritten }
        do {
            if !isUnmarked, try local.extendedAttribute(Placeholder.stateAttribute, of: path) == value { return .notWritten }
            try local.setExtendedAttribute(Placeholder.stateAttribute, of: path, to: value)
            return .written
        } catch let error as SystemError where error.errno == .noSuchFile {
            return .notWritten  // Not here (yet): a download in progress, a file just deleted.
        } catch let error as SystemError where error.errno == .permissionDenied {
            if let file = try? local.metadata(of: path), file.kind == .file, Self.writable(file.mode) != file.mode {
                return .needsTheWriteBit(file)
            }
            log.debug("cannot write \(Placeholder.stateAttribute) of \(path): \(error)")
        } catch let error as SystemError where error.errno == .notSupported && !path.isRoot && rootKeepsAttributes() {
            // One entry that keeps none (a file just replaced by a symlink, as `tar x` does):
            // that entry's problem, not the filesystem's.
            log.debug("cannot write \(Placeholder.stateAttribute) of \(path): \(error)")
        } catch let error as SystemError where error.errno == .notSupported {
            attributesSupported.store(false, ordering: .relaxed)
            log.notice("the local folder's filesystem keeps no user xattrs (\(error)); file states are not written to user.nimbus.state")
        } catch {
            log.debug("cannot write \(Placeholder.stateAttribute) of \(path): \(error)")
        }
        return .notWritten
    }

    /// Read-only files: noted, lent the write bit, marked, given their modes back (durably:
    /// the file's own fsync for one, one flush for several), and dropped from the note.
    private func markLendingTheWriteBit(_ files: [(file: FileMetadata, path: RelativePath, value: [UInt8])]) {
        let entries = files.map {
            LentMode(side: .local, path: $0.path, inode: $0.file.inode, mode: $0.file.mode, working: Self.writable($0.file.mode))
        }
        do {
            try noteLent(entries)
        } catch {
            return log.warning("cannot note the read-only files that Nimbus makes writable to write their state: \(error); "
                + "\(files.count == 1 ? "\(files[0].path) is" : "\(files.count) files are") left without their \(Placeholder.stateAttribute)")
        }
        var lent: [LentMode] = []
        var settled: [SidePath] = []
        for (entry, file) in zip(entries, files) {
            do {
                // Only if it still has the mode read before the note was written: a chmod of
                // the user's meanwhile is theirs (`FileSystem.changeMode`).
                guard try local.changeMode(entry.path, inode: entry.inode, from: entry.mode, to: entry.working, durable: false) else {
                    log.info("\(entry.path) in the local folder changed before its state was written; it is left as it is")
                    settled.append(entry.sidePath)
                    continue
                }
            } catch {
                log.debug("cannot make \(entry.path) writable to write its \(Placeholder.stateAttribute): \(error)")
                settled.append(entry.sidePath)
                continue
            }
            lent.append(entry)
            do {
                try local.setExtendedAttribute(Placeholder.stateAttribute, of: entry.path, to: file.value)
            } catch {
                log.debug("cannot write \(Placeholder.stateAttribute) of \(entry.path): \(error)")
            }
        }
        var given: [LentMode] = []
        for entry in lent {
            do {
                guard try local.changeMode(entry.path, inode: entry.inode, from: entry.working, to: entry.mode, durable: lent.count == 1) else {
                    log.info("\(entry.path) in the local folder changed while its state was written; its mode is left as it is")
                    settled.append(entry.sidePath)
                    continue
                }
                given.append(entry)
            } catch {
                log.error("cannot set the mode of \(entry.path) in the local folder back to \(octalMode(entry.mode)): \(error); "
                    + "it is set back at the next start if it is still \(octalMode(entry.working))")
            }
        }
        if lent.count > 1, !given.isEmpty, let error = flush([.local])[.local] {
            log.error("cannot flush the local folder after setting back the modes of read-only files: \(error); "
                + "they are set back again at the next start if they are still as lent")
        } else {
            settled += given.map(\.sidePath)
        }
        noteReturned(settled)
    }

    /// Whether the local root, a directory, can hold user xattrs: reading one there fails
    /// with `EOPNOTSUPP` only on a filesystem that keeps none.
    private func rootKeepsAttributes() -> Bool {
        do {
            _ = try local.extendedAttribute(Placeholder.stateAttribute, of: .root)
            return true
        } catch let error as SystemError where error.errno == .notSupported {
            return false
        } catch {
            return true  // Another failure says nothing about the filesystem.
        }
    }
}
