import NimbusCore
import NimbusSystem
import NimbusVocabulary

extension Action {
    /// The paths an action writes to, which must not be leased while it runs.
    var lockedPaths: [RelativePath] {
        switch self {
        case .rename(let from, let to, _, _), .preserveConflict(let from, let to, _, _), .movePlaceholder(let from, let to, _): [from, to]
        case .record, .forget, .rebase: []
        default: [path]
        }
    }

    /// Whether what the action changes must wait for a flush before the journal's commit that
    /// records it (`SyncEngine.commit`): every change of a name or a mode. Copies and written
    /// placeholders are durable on their own (file and folder fsynced) or through their
    /// batch's flushes (`installBatch`); the others change only records.
    var awaitsFlushBeforeCommit: Bool {
        switch self {
        case .copy, .writePlaceholder, .record, .forget, .rebase, .adoptPlaceholder, .adoptLocalFile: false
        default: true
        }
    }

    /// Whether the action may run while a batch's copies are being prepared on other threads
    /// (`SyncEngine+CopyWorkers`): another batched copy, or a new folder (creating a folder
    /// changes nothing a copy reads or keeps open). Anything else waits for them.
    var runsBesidePreparedCopies: Bool {
        switch self {
        case .copy, .makeDirectory: true
        default: false
        }
    }
}

/// An expectation of the plan no longer holds: the entry changed after it was scanned.
struct ChangedSincePlanned: Error, CustomStringConvertible {
    var path: RelativePath
    var side: Side
    var description: String { "\(path) changed in the \(side) folder while it was being synced; it is looked at again" }
}

extension SyncEngine {
    /// Executes a plan in order. Returns the paths to look at again at once. The folders it
    /// works in are opened once for the plan, not once per operation (`DirectoryCache`).
    func execute(_ plan: Plan) -> Set<RelativePath> {
        DirectoryCache.keepingDirectoriesOpen { executeInOrder(plan) }
    }

    private func executeInOrder(_ plan: Plan) -> Set<RelativePath> {
        let copies = plan.actions.count {
            switch $0 {
            case .copy, .writePlaceholder: true
            default: false
            }
        }
        var batch: [PendingInstall]? = copies >= settings.batchThreshold ? [] : nil
        // Only batched uploads: a staging folder in the local folder would show in the user's tree.
        var staging = FolderStaging(batch == nil ? [] : plan.stagedFolders(on: .cloud))
        // Its copies are prepared on worker threads (`SyncEngine+CopyWorkers`), joined below.
        let preparation = batch != nil && settings.copyThreads > 1 ? CopyPreparation(threads: settings.copyThreads) : nil
        defer { preparation?.workers.finish() }
        var again = Set<RelativePath>()
        var stoppedAt = plan.actions.count
        // Conflicts whose loser could not be moved to its copy's name (a folder nimbusd may
        // not write to): what the plan does next at either name is skipped, and the path is
        // tried again with its own growing pause (`handle`). Done, the copy's upload found no
        // file, and its new retry (at 1 s, under a name new each second) made the conflict
        // planned, logged and notified again every 2 s for ever.
        var unmoved: [(path: RelativePath, copy: RelativePath)] = []
        giveFoldersBack(all: true)  // Nothing is lent between two executions; this makes sure.
        for (index, action) in plan.actions.enumerated() {
            heartbeat()
            // SIGTERM: stop between two actions, where the watchdog is fed. Each action stands
            // on its own (it re-checks what it expects), so the next start's scan finds the rest.
            if isStopping {
                stoppedAt = index
                break
            }
            if unmoved.contains(where: { $0.path.contains(action.path) || $0.copy.contains(action.path) }) {
                log.debug("skipped, its conflict copy was not made: \(action)")
                continue
            }
            // A barrier: what runs now may touch what an outstanding copy reads or writes.
            if let preparation, !action.runsBesidePreparedCopies {
                collect(preparation, all: true, batch: &batch, again: &again)
            }
            log.debug("\(action)")
            // An application holding a lease on the path (or around it) has asked us to wait.
            let paths = action.lockedPaths
            let handles = paths.compactMap { locks.tryLock($0, .exclusive) }
            guard handles.count == paths.count else {
                handles.forEach(locks.unlock)
                log.info("\(action.path) is leased by an application; it is synced after the lease ends")
                scheduleRetry(action.path, error: "leased", delay: .seconds(1))
                continue
            }
            if let preparation, let request = batchedCopy(action, staging: staging) {
                do {
                    // Its folder stays writable until the batch is installed.
                    try lendFolders(for: action)
                    folderModes.withLock { $0.holdAll() }
                    try handOver(request, of: action, at: index, holding: handles, to: preparation)
                } catch {
                    handles.forEach(locks.unlock)
                    handle(error, for: action, again: &again)
                }
                collect(preparation, all: false, batch: &batch, again: &again)
                continue
            }
            defer { handles.forEach(locks.unlock) }
            // Before the action, so that one failing halfway is flushed too: a record kept after
            // a crash that lost the rename it describes would take the missing name for a
            // deletion and propagate it (the flush is one per filesystem, for the whole pass).
            if action.awaitsFlushBeforeCommit, let side = action.side { awaitFlushBeforeCommit([side]) }
            do {
                let waiting = batch?.count
                try lendFolders(for: action)
                let staged = try stage(action, in: &staging, batch: &batch)
                if !staged { try perform(action, batch: &batch) }
                // A copy waiting in the batch is still in progress: its state is cleared once
                // it is installed (`installBatch`), and its folder stays writable till then.
                if batch?.count == waiting { clearTransient(action.path) }
                if staged || batch?.count != waiting { folderModes.withLock { $0.holdAll() } }
            } catch {
                if case .preserveConflict(let path, let copy, _, _) = action { unmoved.append((path, copy)) }
                handle(error, for: action, again: &again)
            }
            giveFoldersBack(all: false, flushingLater: true)
        }
        var performed = plan
        performed.actions = Array(plan.actions[..<stoppedAt])
        if let preparation {
            collect(preparation, all: true, batch: &batch, again: &again)
            if !preparation.skipped.isEmpty {
                performed.actions = performed.actions.indices.filter { !preparation.skipped.contains($0) }.map { performed.actions[$0] }
            }
        }
        if let batch, !batch.isEmpty || !staging.isEmpty { installBatch(batch, staging: staging, again: &again) }
        alignFolderTimes(performed)
        // Last: a folder without its owner's search bit would hide its contents' times.
        giveFoldersBack(all: true)
        // A pass stopped early records only the conflicts whose copy was made.
        let stopped = performed.actions.count < plan.actions.count
        for conflict in plan.conflicts where !unmoved.contains(where: { $0.copy == conflict.conflictCopy })
            && (!stopped || existsOnEitherSide(conflict.conflictCopy)) {
            updateRecord(conflict.path) { $0.conflictCopy = conflict.conflictCopy }
            publishState(of: conflict.path)
            emit(.conflict(conflict.path, copy: conflict.conflictCopy))
            log.notice("\(conflict)")
        }
        return again
    }

    func perform(_ action: Action, batch: inout [PendingInstall]?) throws {
        switch action {
        case .rename(let from, let to, let side, let expected):
            try expect(from, on: side, expected)
            try lendMovedFolder(from, to: to, on: side, expected: expected)
            try noteMove(from, to: to, on: side)
            try system(side).rename(from, to: to, replacing: false)
            folderModes.withLock { $0.moved(from: from, to: to, on: side) }
            noteReturned([])
            // The base moves with the entry; a rename changes neither side's metadata, so
            // reading them again would only risk absorbing a change made meanwhile.
            rekey(from: from, to: to)
            emit(.renamed(from: from, to: to, on: side))
        case .preserveConflict(let path, let copyName, let side, let expected):
            try expect(path, on: side, expected)
            try system(side).rename(path, to: copyName, replacing: false)
        case .remove(let path, let side, let expected):
            try expect(path, on: side, expected)
            let kept = try removeKeepingContent(path, on: side, expected: expected)
            setRecord(path, nil)
            noteDeletion(path, on: side, kept: kept)
            emit(.removed(path, on: side))
        case .removeDirectory(let path, let side, let expected):
            try expect(path, on: side, expected)
            try system(side).removeDirectory(path)
            setRecord(path, nil)
            noteDeletion(path, on: side, kept: .folder(mode: expected.mode))
            emit(.removed(path, on: side))
        case .makeDirectory(let path, let side, let source):
            // A folder made without its owner's write bit is recorded once its mode is set.
            var hasItsMode = true
            do {
                hasItsMode = try makeFolder(path, on: side, source: source)
            } catch let error as SystemError where error.errno == .fileExists {
                guard try system(side).metadata(of: path)?.kind == .directory else { throw error }
            }
            if hasItsMode { try recordWrite(path, on: side, source: source) }
        case .copy(let path, let side, let source, let replacing):
            try copy(path, to: side, source: source, replacing: replacing, batch: &batch)
        case .makeSymlink(let path, let side, let source, let replacing):
            try expect(path, on: side.other, source)
            if let replacing {
                try expect(path, on: side, replacing)
                try removeKeepingVersion(path, on: side, expected: replacing)
            }
            try system(side).makeSymlink(path, target: source.symlinkTarget ?? [])
            // Its own time, as `cp -a` keeps it (utimensat with AT_SYMLINK_NOFOLLOW).
            try system(side).setAttributes(path, mode: nil, mtime: source.mtime)
            try recordWrite(path, on: side, source: source)
        case .setMode(let path, let side, let source, let expected):
            try expect(path, on: side, expected)
            if source.kind == .directory, try setFolderMode(path, on: side, source: source, expected: expected) { return }
            let isSymlink = source.kind == .symlink
            // Flushed before the commit that records it (`awaitsFlushBeforeCommit`): a chmod lost
            // in a crash, under a record that says it was made, would be taken for a change back.
            try system(side).setAttributes(path, mode: isSymlink ? nil : source.mode, mtime: isSymlink ? source.mtime : nil)
            try recordWrite(path, on: side, source: source)
        case .record(let path, let l, let c, let hash):
            let base = BaseEntry(local: l, cloud: c, hash: hash, isAmbiguous: isFresh(l))
            updateRecord(path, creating: base) { $0.base = base }
        case .forget(let path):
            setRecord(path, nil)
        case .rebase(let from, let to):
            rekey(from: from, to: to)
        case .writePlaceholder, .removePlaceholder, .renamePlaceholder, .movePlaceholder, .retirePlaceholder, .repairPlaceholder,
             .adoptPlaceholder, .adoptLocalFile, .convertPlaceholder, .evict:
            try performPlaceholderAction(action, batch: &batch)
        }
    }

    /// A cloud entry is moved to the versions store; a local one (which equals the base,
    /// already checked) is removed, unless a program has it open for writing or changed it
    /// meanwhile (`removeLocalFile`). On a shared
    /// network cloud, what was moved is checked against the base's content hash
    /// (`FileSystem.moveAside`): another device's version is put back, never silently kept
    /// only in the versions store. `expected` is what the plan saw (nil: whatever is there).
    func removeKeepingVersion(_ path: RelativePath, on side: Side, expected: FileMetadata? = nil) throws {
        guard side == .cloud else { try removeLocalFile(path, expected: expected); return }
        try moveToVersions(path, filedUnder: path, expected: expected)
    }

    /// Moves the cloud file at `path` into the versions store as a version of `file` (itself,
    /// or the file a conflict copy belongs to), checking what was moved against `expected`.
    /// Returns where it went.
    @discardableResult
    func moveToVersions(_ path: RelativePath, filedUnder file: RelativePath, expected: FileMetadata? = nil) throws -> RelativePath {
        let store = VersionStore(device: settings.deviceName)
        let now = clock.wallNow
        let hash = expected == nil ? nil : expectedCloudHash(path)
        guard let expected = try expected ?? cloud.metadata(of: path) else { throw CopyError.destinationChanged(path) }
        try makeDirectories(store.location(for: file, at: now).parent, in: cloud)
        var attempt = 1
        while true {
            do {
                let location = store.location(for: file, at: now, attempt: attempt)
                try cloud.moveAside(path, to: location, expected: expected, hash: hash)
                noteVersionKept(size: expected.size)
                return location
            } catch let error as SystemError where error.errno == .fileExists && attempt < 100 {
                attempt += 1
            }
        }
    }

    /// A local file open for writing is never replaced, deleted or evicted (DESIGN §3): the
    /// program's later writes would go to a file without a name.
    func ensureNotOpenForWriting(_ path: RelativePath) throws {
        if local.isOpenForWriting(path) { throw CopyError.destinationInUse(path) }
    }

    /// Folders keep their modification times (issue #13): a folder written into on one side
    /// takes the time of the same folder on the other side, once its contents are written
    /// (deepest first; setting a folder's time does not change its parent's). A folder
    /// written into on both sides in the same plan is left as it is.
    func alignFolderTimes(_ plan: Plan) {
        var written: [Side: Set<RelativePath>] = [.local: [], .cloud: []]
        for action in plan.actions {
            guard let side = action.side else { continue }
            if case .makeDirectory(let path, _, _) = action { written[side]!.insert(path) }
            for path in action.lockedPaths where !path.parent.isRoot { written[side]!.insert(path.parent) }
        }
        for side in Side.allCases {
            for folder in written[side]!.sorted(by: { $0.depth > $1.depth }) where !written[side.other]!.contains(folder) {
                guard let here = try? system(side).metadata(of: folder), here.kind == .directory,
                      let there = try? system(side.other).metadata(of: folder), there.kind == .directory,
                      here.mtime != there.mtime else { continue }
                do {
                    try system(side).setAttributes(folder, mode: nil, mtime: there.mtime)
                } catch {
                    log.debug("cannot set the time of \(folder) in the \(side) folder: \(error)")
                }
            }
        }
    }

    func makeDirectories(_ path: RelativePath, in fs: FS) throws {
        if path.isRoot { return }
        if try fs.metadata(of: path)?.kind == .directory { return }
        try makeDirectories(path.parent, in: fs)
        do { try fs.makeDirectory(path, mode: 0o755) } catch let e as SystemError where e.errno == .fileExists {}
    }

    /// Re-checks that `path` on `side` is still what the plan saw.
    func expect(_ path: RelativePath, on side: Side, _ expected: FileMetadata?) throws {
        let current = try system(side).metadata(of: path)
        switch (current, expected) {
        case (nil, nil): return
        case let (c?, e?) where c.isUnchanged(from: e): return
        default: throw ChangedSincePlanned(path: path, side: side)
        }
    }
}
