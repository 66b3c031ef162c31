import NimbusCore
import NimbusVocabulary

/// How a guarded removal of a local file ended.
enum GuardedRemoval: Equatable {
    case removed
    /// Out of its folder, kept at this place in a holding folder (see `keepRemoved`).
    case kept(at: RelativePath)
    /// The file was not as expected once out of reach: it is back at its name (or kept as a
    /// conflict copy beside it when the name was taken meanwhile).
    case changed
    /// A program has it open for writing: it is back at its name.
    case openForWriting

    /// Where a file waits while its removal is checked: `.nimbus-tmp-TAG` and the first 200
    /// bytes of its name, cut between characters (a crash leaves it there until the next
    /// start, and a file manager may show it meanwhile).
    static func privateName(of name: [UInt8], tag: String) -> [UInt8] {
        TemporaryName.prefix + Array(tag.utf8) + FileName.prefix(name, fitting: 200)
    }
}

extension SyncEngine {
    /// Deletes the local file `path` only if it is exactly `expected` and, with
    /// `checkingWriters`, no program has it open for writing (DESIGN §3). A check followed by an
    /// unlink leaves a gap in which a program can save the file, and that save would go with
    /// it. So the file is first renamed to a private name, which no program can open any more,
    /// and checked there: open for writing first (a writer that opened it before the rename),
    /// then its metadata (a writer that closed before that check has written what it wrote,
    /// which the metadata shows). Only then is it removed.
    ///
    /// With `keeping`, a file that passed the checks is moved to a holding folder instead of
    /// removed (a deletion the mass-delete guard may still undo, `keepRemoved`).
    ///
    /// A crash before the removal leaves it at a temporary name, which the next start sweeps:
    /// it equals the base there, and the base is kept on the other side or in the versions store.
    func removeGuarded(_ path: RelativePath, expected: FileMetadata, tag: String,
                       checkingWriters: Bool, keeping: Bool = false) throws -> GuardedRemoval {
        let aside = try path.parent.appending(name: GuardedRemoval.privateName(of: path.name, tag: tag))
        try local.rename(path, to: aside, replacing: false)
        let outcome: GuardedRemoval
        if checkingWriters && local.isOpenForWriting(aside) {
            outcome = .openForWriting
        } else if let moved = try local.metadata(of: aside), moved.isUnchanged(from: expected) {
            if keeping, let place = keepRemoved(aside, of: path) { return .kept(at: place) }
            try local.removeFile(aside)
            return .removed
        } else {
            outcome = .changed
        }
        try putBack(aside, at: path) { copy in
            "\(path) changed while it was being removed, and a new \(path) appeared meanwhile; the changed one is kept as \(copy)"
        }
        return outcome
    }

    /// Puts a file that must not be removed back at `path`; if a program created a new file
    /// there meanwhile, it is kept beside it as a conflict copy (a local file: uploaded next),
    /// and `notice` says so in the log. Returns the name it is back at.
    @discardableResult
    func putBack(_ aside: RelativePath, at path: RelativePath, notice: (RelativePath) -> String) throws -> RelativePath {
        do {
            try local.rename(aside, to: path, replacing: false)
            return path
        } catch let error as SystemError where error.errno == .fileExists {
            let copy = namer.name(for: path) { (try? local.metadata(of: $0)) != nil }
            try local.rename(aside, to: copy, replacing: false)
            log.notice(notice(copy))
            return copy
        }
    }

    /// Deletes a local file only if it is exactly `expected` (evicting, converting or removing
    /// a placeholder, which no program writes through): see `removeGuarded`.
    func removeUnchanged(_ path: RelativePath, expected: FileMetadata) throws {
        guard try removeGuarded(path, expected: expected, tag: "evict-", checkingWriters: false) == .removed else {
            throw EngineRequestError(kind: .notInSync, message: "\(path) changed while it was evicted; it is kept")
        }
    }

    /// Removes the local file at `path`, which the plan saw as `expected` (nil: as it is now),
    /// unless a program has it open for writing or changed it since. With `keeping`, it is
    /// moved to a holding folder instead when it can be; returns where it was.
    @discardableResult
    func removeLocalFile(_ path: RelativePath, expected: FileMetadata?, keeping: Bool = false) throws -> RelativePath? {
        // A file visibly in use is not even moved: a program saving it meanwhile would find its name gone.
        try ensureNotOpenForWriting(path)
        guard let expected = try expected ?? local.metadata(of: path) else { return nil }
        switch try removeGuarded(path, expected: expected, tag: "remove-", checkingWriters: true, keeping: keeping) {
        case .removed: return nil
        case .kept(let place): return place
        case .changed: throw ChangedSincePlanned(path: path, side: .local)
        case .openForWriting: throw CopyError.destinationInUse(path)
        }
    }
}
