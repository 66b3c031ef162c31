import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// What the runtime needs of a folder's watcher: `TreeWatcher` in nimbusd, a fake in tests.
/// `next` blocks on the side's own thread; `wake` and `close` come from the engine thread.
public protocol TreeWatching: AnyObject, Sendable {
    /// The next events; blocks until there are some, or `wake` was called (then it may return none).
    func next(timeout: Duration?) throws -> [WatchEvent]
    func wake()
    func close()
    /// Reads each event as it comes from now on, ending a gathering under way.
    func stopGathering()
}

extension TreeWatching {
    public func stopGathering() { wake() }
}

extension TreeWatcher: TreeWatching {}

/// Watching both folders (DESIGN §8): a thread per side turns events into batcher hints.
extension PairRuntime {
    func startWatchers() {
        for side in Side.allCases where !(side == .cloud && options.cloudPolls) {
            startWatcher(side)
        }
    }

    /// Tries again to watch the sides whose watcher failed or stopped. A side watched again is
    /// rescanned: what changed there while nobody watched reported nothing. The sides still
    /// unwatched are tried again later (`watchRetry`).
    func restartMissingWatchers() {
        var restarted = false
        for side in Side.allCases where watchers[side] == nil && !(side == .cloud && options.cloudPolls) {
            guard startWatcher(side) else { continue }
            batcher.polledSides.remove(side)
            restarted = true
            log.notice("watching the \(side) folder again; rescanning it for what changed meanwhile")
        }
        if restarted { batcher.batcher.add(.rescanAll, now: clock.monotonicNow) }
        if batcher.polledSides.isEmpty { batcher.nextPoll = nil }
        if !watcherMissing { watchRetry = nil }
    }

    /// Whether a side that should be watched has no watcher.
    var watcherMissing: Bool {
        Side.allCases.contains { side in watchers[side] == nil && !(side == .cloud && options.cloudPolls) }
    }

    /// The first retry of a watcher that could not start comes soon: the usual cause is a
    /// passing shortage (inotify instances, EMFILE, while other programs hold them), and until
    /// then the side is only polled, every `pollInterval` (30 s), and its opens are not seen.
    /// Each failure doubles the wait, up to `lastWatchRetry` (or the poll interval when shorter):
    /// a failed try is one system call, and the side is watched again within seconds of the
    /// shortage's end.
    static var firstWatchRetry: Duration { .seconds(1) }
    static var lastWatchRetry: Duration { .seconds(5) }

    /// Plans the next try to watch the missing sides, after a failed one (`failed`) or a reset.
    func scheduleWatchRetry(failed: Bool) {
        guard watcherMissing else {
            watchRetry = nil
            return
        }
        let delay = failed ? min((watchRetry?.delay ?? Self.firstWatchRetry / 2) * 2, Self.lastWatchRetry, options.pollInterval) : Self.firstWatchRetry
        watchRetry = (clock.monotonicNow + delay, delay)
    }

    /// Retries the missing watchers when their retry is due, halted or not: a pair halted for
    /// a reason other than a missing root (a marker missing, another cloud folder) has both
    /// folders to watch, and a missing root fails the try at once.
    func retryWatchersIfDue(now: MonotonicInstant) {
        guard let retry = watchRetry, now >= retry.due else { return }
        restartMissingWatchers()
        scheduleWatchRetry(failed: true)
    }

    @discardableResult
    func startWatcher(_ side: Side) -> Bool {
        let root = side == .local ? options.localRoot : options.cloudRoot
        // Opens in the local folder: placeholders to download, last use for the cache budget.
        let options = TreeWatcher.Options(reportsOpens: side == .local, gathering: watchersGather ? Self.watchGathering : .zero,
                                          exclude: { path in side == .cloud && path == RootMarkers.cloudDirectory })
        let watcher: Watcher
        do {
            watcher = try makeWatcher(side, SystemPath(root), options)
        } catch {
            // Said once; the retries that fail too are only debug lines.
            if batcher.polledSides.contains(side) {
                log.debug("still cannot watch the \(side) folder \(root): \(error)")
            } else {
                log.warning("cannot watch the \(side) folder \(root): \(error); it is scanned every \(self.options.pollInterval.wholeSeconds) s until it can be watched again")
            }
            batcher.polledSides.insert(side)
            if batcher.nextPoll == nil { batcher.nextPoll = clock.monotonicNow + self.options.pollInterval }
            if watchRetry == nil { scheduleWatchRetry(failed: false) }
            return false
        }
        watchers[side] = watcher
        let inbox = self.inbox
        ProcessSupport.detachThread(name: "nimbus-watch-\(side)") { [self] in
            while !stopping.load(ordering: .sequentiallyConsistent) {
                do {
                    let events = try watcher.next(timeout: nil)
                    if events.isEmpty { continue }
                    inbox.post(.events(side, events))
                    if events.contains(where: { $0.kind == .rootRemoved }) { break }
                } catch {
                    break
                }
            }
            inbox.post(.watcherStopped(side))
        }
        return true
    }

    /// How long a watcher lets a burst of events gather before reading it (`TreeWatcher.Options`),
    /// during the first pass. That pass is such a burst: every file it reads (IN_OPEN), renames
    /// into place and marks (IN_ATTRIB) is an event, and a watcher woken for each one costs the
    /// engine a wake-up in each of those system calls. 5 ms is far below the batcher's quiet
    /// period (2 s) and below what a person opening a placeholder notices.
    static var watchGathering: Duration { .milliseconds(5) }

    /// After the first pass, watchers read each event as it comes, and what the pass caused is
    /// read at once. Later passes are not gathered for: the look that an event of our own
    /// write brings (at a file just uploaded) would come up to 5 ms later, into the time a
    /// program may be renaming that file, and find it gone: a deletion, where the rename's
    /// own events, read with the next batch, would have made it a rename (SyncBasicsTests'
    /// 100 MB rename caught it even with the gathering ended at each pass's end).
    func stopWatchersGathering() {
        watchersGather = false
        for watcher in watchers.values { watcher.stopGathering() }
    }

    /// The folders that arrived by a rename, from outside the tree or from inside it.
    static func foldersMovedIn(_ events: [WatchEvent]) -> Set<RelativePath> {
        var folders = Set<RelativePath>()
        for event in events where event.isDirectory {
            switch event.kind {
            case .movedTo, .moved: folders.insert(event.path)
            default: break
            }
        }
        return folders
    }

    /// Whether `path` is strictly beneath one of `folders`.
    static func isBeneath(_ path: RelativePath, _ folders: Set<RelativePath>) -> Bool {
        var folder = path.parent
        while !folder.isRoot {
            if folders.contains(folder) { return true }
            folder = folder.parent
        }
        return false
    }

    /// Turns watch events into batcher hints. Events are hints: the scan decides.
    func absorb(_ events: [WatchEvent], from side: Side) {
        // The looks below (an echo's lstat, a new entry's kind) open each entry's folder once
        // for the burst, not once per entry: after a first sync of 1 000 files, the echo
        // checks cost three system calls a file without this.
        DirectoryCache.keepingDirectoriesOpen { absorbEach(events, from: side) }
    }

    private func absorbEach(_ events: [WatchEvent], from side: Side) {
        let now = clock.monotonicNow
        let events = events.pairingMoves()
        let movedIn = Self.foldersMovedIn(events)
        // Folders the engine uploaded whole arrive by a rename: what the watcher found in them
        // is the engine's own, unless it is not what the journal recorded (`SyncEngine+Echoes`).
        let ownFolders = side == .cloud ? movedIn.filter { engine.isOwnEcho($0, on: side) } : Set()
        for event in events {
            // What the watcher found in a folder moved in whole (a folder made elsewhere, an
            // upload's staging folder published): the folder's own hint brings all of it in
            // scope, with one listing, rather than a look and a pass per entry (issue 15).
            if !movedIn.isEmpty, case .created = event.kind, Self.isBeneath(event.path, movedIn) {
                if Self.isBeneath(event.path, ownFolders) && !engine.isAsRecorded(event.path, on: side) {
                    batcher.batcher.add(.settled(event.path), now: now)
                }
                continue
            }
            if event.kind.mayEchoOwnChange, engine.isOwnEcho(event.path, on: side) { continue }
            switch event.kind {
            case .created where !event.isDirectory:
                // A new file is usually still open for writing; links and symlinks are not.
                let kind = try? engine.system(side).metadata(of: event.path)?.kind
                batcher.batcher.add(kind == .file ? .writing(event.path) : .settled(event.path), now: now)
            case .modified:
                batcher.batcher.add(.writing(event.path), now: now)
            case .moved(let from):
                batcher.batcher.add(.settled(from), now: now)
                batcher.batcher.add(.settled(event.path), now: now)
            case .deleted, .movedFrom:
                batcher.reportedGone.insert(event.path)
                batcher.batcher.add(.deleted(event.path), now: now)
            case .opened:
                if side == .local { opened(event.path) }
            case .overflow:
                log.warning("the \(side) folder changed faster than inotify could report (queue overflow): rescanning it")
                batcher.batcher.add(.rescanAll, now: now)
            case .rootRemoved:
                batcher.batcher.add(.rescanAll, now: now)
            case .watchLimitReached(let limit):
                log.warning("\(limit)")
                batcher.polledSides.insert(side)
                if batcher.nextPoll == nil { batcher.nextPoll = now + options.pollInterval }
            default:
                batcher.batcher.add(.settled(event.path), now: now)
            }
        }
    }
}
