import NimbusCore
import NimbusSystem
import NimbusVocabulary

// The copies of a batch are prepared on worker threads (issue 15). Writing 1 000 small files
// is system calls, not bandwidth (open, two leases, an exclusive create, copy_file_range, a
// chmod, a utimens, two fstat, two close each): on two cores, two threads do them in 15 ms
// where one takes 26. A batched copy is installed only after the batch's flush anyway, so
// only its preparation (`prepare`) moves to a worker; everything else stays on the engine
// thread, in plan order: the walk through the plan, the locks, the transient state, the
// staging folders, and — when the copy is collected, in plan order — the batch it joins or
// the error it reports (`handle`, with the same text as before). Records, marks, the journal
// and the events about outcomes are never touched by a worker.
//
// Barriers: before any action that is neither a batched copy nor a `.makeDirectory`, before
// the batch is installed and when a stop is requested, every outstanding copy is collected
// first. A later removal, rename, mode change or conflict move may touch what a copy reads
// or writes, and must not run under it.
//
// Kept folders (`DirectoryCache`, one cache per thread): each worker keeps the folders it
// opens from one barrier to the next (`WorkerThreads.newRound`). Every rename or removal of a
// folder that this process makes (the callers of `DirectoryCache.forget`: `rename`,
// `removeDirectory`, `moveAside`, `install` over a folder, `publishFolder`) runs on the engine
// thread after a barrier, so no descriptor a worker keeps goes stale during its copies. What
// runs beside the workers creates folders (`makeDirectory`, a staging folder, a missing
// temporary folder), which moves no kept descriptor. A folder someone else moves meanwhile is
// followed for at most `DirectoryCache.maximumAge`, as on the engine thread.
extension SyncEngine {
    /// The batched copies handed to the workers and not yet collected, oldest first.
    /// Engine thread only.
    final class CopyPreparation {
        typealias Output = Result<PreparedCopy, any Error>?

        struct Outstanding {
            let index: Int
            let action: Action
            let request: CopyRequest
            /// The action's locks: held until the copy is collected.
            let handles: [LockHandle]
            let ticket: WorkerThreads<Output>.Ticket
        }

        let workers: WorkerThreads<Output>
        var outstanding: [Outstanding] = []
        /// Copies not started because a stop was requested: not performed.
        var skipped: Set<Int> = []
        /// More outstanding than this and the engine thread waits for half of them: enough to
        /// keep every worker busy, few enough that locks and memory stay bounded.
        let limit: Int

        init(threads: Int) {
            workers = WorkerThreads(count: threads, name: "nimbus-copy") { DirectoryCache.keepingDirectoriesOpen($0) }
            limit = 8 * threads
        }
    }

    /// The copy that `action` makes into the batch, placed where `stage` would place it.
    func batchedCopy(_ action: Action, staging: FolderStaging) -> CopyRequest? {
        guard case .copy(let path, let side, let source, let replacing) = action else { return nil }
        let staged = side == .cloud && replacing == nil ? staging.staged(path) : nil
        return CopyRequest(path: path, side: side, source: source, replacing: replacing, staged: staged)
    }

    /// Starts the copy on the engine thread (`beginCopy`) and hands its preparation to the
    /// workers; its locks stay held until it is collected. Throws what `beginCopy` throws
    /// (the locks are then the caller's to release).
    func handOver(_ request: CopyRequest, of action: Action, at index: Int, holding handles: [LockHandle],
                  to preparation: CopyPreparation) throws {
        try beginCopy(request)
        let ticket = preparation.workers.submit { [self] in
            // Stopping: copies not started yet stay undone, as the actions after a stop do.
            if isStopping { return nil }
            return Result { try prepare(request, durable: false) }
        }
        preparation.outstanding.append(.init(index: index, action: action, request: request, handles: handles, ticket: ticket))
    }

    /// Collects prepared copies in plan order: all of them with `all` (a barrier), else those
    /// already prepared at the head, waiting while more than `limit` are out.
    /// A prepared copy joins the batch; a failed one is handled as a failed `copy` is.
    func collect(_ preparation: CopyPreparation, all: Bool, batch: inout [PendingInstall]?, again: inout Set<RelativePath>) {
        // Sleeping until a copy is prepared costs a wake-up, a system call on each side, about
        // a tenth of a small file's prepare when it is paid for every copy. So the engine
        // thread sleeps until a later copy is prepared (the last, or the one halfway along):
        // the workers take copies in order, so by then those before it are prepared too (bar
        // one per other worker) and are collected without sleeping again.
        if all, let last = preparation.outstanding.last {
            last.ticket.waitUntilReady()
        } else if preparation.outstanding.count > preparation.limit {
            preparation.outstanding[preparation.limit / 2].ticket.waitUntilReady()
        }
        while let oldest = preparation.outstanding.first,
              all || preparation.outstanding.count > preparation.limit || oldest.ticket.isReady {
            preparation.outstanding.removeFirst()
            defer { oldest.handles.forEach(locks.unlock) }
            switch oldest.ticket.wait() {
            case .success(let prepared)?:
                batch!.append(oldest.request.pending(prepared))
            case .failure(let error)?:
                handle(error, for: oldest.action, again: &again)
            case nil:
                preparation.skipped.insert(oldest.index)
                clearTransient(oldest.request.path)
            }
        }
        if all { preparation.workers.newRound() }
    }
}
