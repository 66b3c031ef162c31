import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// What the executor does when an action fails: look again, retry, or report.
extension SyncEngine {
    func handle(_ error: any Error, for action: Action, again: inout Set<RelativePath>) {
        let path = action.path
        switch error {
        case is CancellationError:
            // Stopping (SIGTERM) mid-copy: its temporary is gone and nothing is recorded; the
            // next start's scan finds the path as it was and copies it then.
            log.info("\(action.path): the copy was abandoned, nimbusd is stopping")
            clearTransient(path)
        case is ChangedSincePlanned, CopyError.destinationChanged:
            log.info("\(error)")
            again.insert(path)
        case CopyError.notTheSyncedVersion(let replaced, let keptAt):
            anotherDeviceReplaced(replaced, keptAt: keptAt)
            again.insert(path)
        case CopyError.sourceChanged:
            log.info("\(error)")
            scheduleRetry(path, error: "\(error)")
        case CopyError.destinationInUse:
            // Asked again every second (a lease probe costs little): once the program closes
            // the file, the path is planned afresh, and a write it made meanwhile is a conflict.
            log.info("\(error)")
            scheduleRetry(path, error: "\(error)", delay: .seconds(1))
        default:
            let message = Self.explain(error, action: action)
            report(message, of: path)
            scheduleRetry(path, error: message)
        }
    }

    /// Shows the failure of `path` while it lasts: its state `error`, and status's `lastError`.
    /// Told (the log's error, the watchers' `error` event) when it starts or its message
    /// changes, not again at each retry or each pass that meets it: an unreadable file was
    /// logged 21 times a minute with a cloud polled every 5 s, and sent as many events.
    func report(_ message: String, of path: RelativePath) {
        let isNew = state.withLock { $0.toldFailures.updateValue(message, forKey: path) != message }
        if isNew { log.error(message) } else { log.debug("again: \(message)") }
        showFailure(message, of: path, tell: isNew)
        publishState(of: path)
    }

    /// Shows `path` in error with `message`, as status's `lastError` too, until the failure is
    /// over (`forgetLastErrorIfOver`); `tell`: sends the `error` event, for a failure new or changed.
    func showFailure(_ message: String, of path: RelativePath, tell: Bool) {
        state.withLock { s in
            s.status.lastError = message
            s.lastErrorPath = path
        }
        setTransient(path, .error(message))
        if tell { emit(.error(path, message)) }
    }

    /// `lastError` tells a current problem, not history (the log keeps that), as Syncthing's
    /// and Dropbox's status do: once the failure it shows is over (the path synced, or went),
    /// it shows another that lasts, or nothing. Before, a fixed failure (a file made readable
    /// again, a disk with room again) stayed in `nimbusctl status` until the daemon restarted.
    func forgetLastErrorIfOver() {
        state.withLock { s in
            guard let shown = s.lastErrorPath, s.transient[shown]?.message == nil else { return }
            let lasting = s.transient.filter { $0.value.message != nil }.min { $0.key < $1.key }
            s.lastErrorPath = lasting?.key
            s.status.lastError = lasting?.value.message
        }
    }

    /// Plain English: what failed, why, and what to do.
    static func explain(_ error: any Error, action: Action) -> String {
        if let tooLong = error as? PlaceholderNameTooLong { return tooLong.description }
        guard let e = error as? SystemError else {
            return "cannot sync \(action.path) in \(action.side.map { "the \($0) folder" } ?? "the journal"): \(error)"
        }
        // A copy's side is where it writes; opening or reading the file it copies failed on
        // the other side (an unreadable local file is not a problem of the cloud folder's).
        let side = sourceSide(of: e, action) ?? action.side
        let what = "\(action.path) in \(side.map { "the \($0) folder" } ?? "the journal")"
        switch e.errno {
        case .noSpace, .quotaExceeded:
            return "cannot write \(what): the disk is full. Free some space; sync resumes by itself."
        case .permissionDenied, .notPermitted:
            return "cannot \(e.operation) \(what): permission denied. Check the owner and permissions of \(e.path); sync retries by itself."
        case .readOnlyFileSystem:
            return "cannot write \(what): the filesystem is read-only. Remount it read-write; sync retries by itself."
        case .nameTooLong:
            return "cannot create \(what): the name is too long for that filesystem. Rename it."
        case .tooManySymlinks, .crossDevice:
            return "refusing \(what): a folder on the way is a symlink or a mount point, which Nimbus never follows."
        default:
            return "cannot \(e.operation) \(what): \(e.errno). Sync retries by itself."
        }
    }

    /// The side a copy reads from, when `error` is its open or read of the file it copies
    /// (the same relative path, on the other side: see `Copier.prepare`); else nil.
    static func sourceSide(of error: SystemError, _ action: Action) -> Side? {
        guard case .copy(let path, let target, _, _) = action, ["open", "read"].contains(error.operation),
              error.path == path.description else { return nil }
        return target.other
    }
}

/// Failures that last are told once: each pass that meets them again says so at debug level.
extension SyncEngine {
    /// Logs the folders a pass could not read, once each (a folder without read permission
    /// was warned about at every pass over its parent, and at each retry), and forgets those
    /// within `scope` that were read this time, so that a new failure there is told again.
    /// Told again too when the cause changes (not the wording: a folder that is a scope root
    /// of its own fails its scan, inside a wider scope its listing).
    ///
    /// What is inside such a folder does not sync, so the folder is in error until it is read
    /// again: status counts it and names it (it said "Up to date" before). Its state mark is
    /// not written: a folder that cannot be read rarely takes an xattr either.
    func tellUnreadable(_ problems: [SidePath: (message: String, cause: Errno?)], scope: [RelativePath]) {
        let (new, again, failed, readAgain) = state.withLock { s -> ([String], [String], [(RelativePath, String)], [RelativePath]) in
            var readAgain: [RelativePath] = []
            if !s.toldUnreadable.isEmpty {
                s.toldUnreadable = s.toldUnreadable.filter { told, _ in
                    let stays = problems[told] != nil || !scope.contains { $0.contains(told.path) }
                    if !stays { readAgain.append(told.path) }
                    return stays
                }
            }
            var new: [String] = [], again: [String] = [], failed: [(RelativePath, String)] = []
            for (place, problem) in problems.sorted(by: { $0.key.path < $1.key.path }) {
                let told = s.toldUnreadable.updateValue(problem.cause, forKey: place)
                if told == nil || told! != problem.cause { new.append(problem.message) } else { again.append(problem.message) }
                // Its error stands while it cannot be read, even if something cleared it.
                if s.transient[place.path]?.message == nil { failed.append((place.path, problem.message)) }
            }
            // Read again on this side, and not still unreadable on the other.
            readAgain.removeAll { path in s.toldUnreadable.keys.contains { $0.path == path } || s.transient[path]?.message == nil }
            return (new, again, failed, readAgain)
        }
        for message in new { log.warning(message) }
        for (path, message) in failed { showFailure(message, of: path, tell: true) }
        for message in again { log.debug("again: \(message)") }
        for path in readAgain { clearTransient(path) }
    }
}
