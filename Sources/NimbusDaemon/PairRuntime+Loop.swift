import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// The engine thread's loop: wait for a message or the next deadline, handle what was posted,
/// then do what is due (`turn`). Tests drive the same steps with `step`, without waiting.
extension PairRuntime {
    func loop() {
        while true {
            finishStart()
            handBackMemoryIfIdle()
            guard handle(inbox.wait(until: nextWakeUp(), clock: clock)) else { return }
            turn()
        }
    }

    /// Going idle after a burst: gives back what the burst freed (the initial sync of 10 000
    /// files leaves about 1.5 MiB of free pages behind; trimming after each pass missed what
    /// the watchers' echo events freed afterwards) and unmaps the code it ran. After less work
    /// (a few files, the tail of a burst), the same once the pair has been idle for
    /// `settledTrimDelay`: a one-file pass maps about 1.6 MiB of code again, which would
    /// otherwise stay until the next burst. True when memory was handed back.
    @discardableResult
    func handBackMemoryIfIdle() -> Bool {
        guard workSinceTrim > 0, batcher.batcher.nextDeadline == nil else { return false }
        let now = clock.monotonicNow
        guard workSinceTrim >= Self.trimAfterWork || settledTrim.map({ now >= $0 }) == true else {
            if settledTrim == nil { settledTrim = now + Self.settledTrimDelay }
            return false
        }
        engine.returnFreeMemory()
        workSinceTrim = 0
        settledTrim = nil
        return true
    }

    /// For tests driving the runtime on their own thread: handles what was posted and does
    /// what is due now, without waiting. False once stopped.
    func step() -> Bool {
        finishStart()
        guard handle(inbox.wait(until: .origin, clock: clock)) else { return false }
        turn()
        return true
    }

    /// The earliest deadline of the batcher, the retries and the timers.
    func nextWakeUp() -> MonotonicInstant? {
        let usesCache = engine.settings.cacheLimit != nil || engine.settings.evictAfter != nil
        let paused = engine.isPaused
        // A hand-back that is due waits for the batch being gathered (and its pass).
        let trim = batcher.batcher.nextDeadline == nil ? settledTrim : nil
        let deadlines = [paused ? nil : batcher.batcher.nextDeadline, engine.nextRetry, batcher.nextRescan, batcher.nextPoll,
                         usesCache && !paused ? nextCacheCheck : nil,
                         isHalted ? nextHaltedCheck : nil, nextWatchdog, trim, isHalted ? nil : engine.nextKeptRelease,
                         watchRetry?.due]
        return deadlines.compactMap { $0 }.min()
    }

    /// Handles posted messages; false at `stop`.
    func handle(_ messages: [Message]) -> Bool {
        for message in messages {
            switch message {
            case .stop: return false
            case .run(let work): work()
            case .events(let side, let events):
                workSinceTrim += events.count
                absorb(events, from: side)
            case .watcherStopped(let side):
                watchers[side] = nil
                batcher.polledSides.insert(side)
                if batcher.nextPoll == nil { batcher.nextPoll = clock.monotonicNow + options.pollInterval }
                if watchRetry == nil { scheduleWatchRetry(failed: false) }
            }
        }
        return true
    }

    /// Does what is due now: the watchdog, retries, the cache budget, rescans, and a sync of
    /// the batch that has settled.
    func turn() {
        let now = clock.monotonicNow
        if let interval = notifier.watchdogInterval, let due = nextWatchdog, now >= due {
            engine.heartbeat()
            nextWatchdog = now + interval
        }
        for path in engine.dueRetries() { batcher.batcher.add(.settled(path), now: now) }
        engine.retryCommitIfDue()
        // What deleted files kept for the mass-delete guard goes once its window has passed
        // (not while a root is missing: the rest of that deletion cannot be seen then).
        if !isHalted, let due = engine.nextKeptRelease, now >= due { engine.releaseExpiredDeletions() }
        retryWatchersIfDue(now: now)
        let paused = engine.isPaused
        if !paused && !isHalted { checkCacheBudget(now: now) }
        // While halted (a root missing or not ours), look again every few seconds; not at
        // every wake-up, since looking reads the root markers, which wakes the watcher.
        if now >= batcher.nextRescan || (isHalted && now >= nextHaltedCheck) {
            batcher.batcher.add(.rescanAll, now: now)
            batcher.nextRescan = now + options.rescanInterval
            nextHaltedCheck = now + Self.haltedCheckInterval
        }
        if let poll = batcher.nextPoll, now >= poll {
            batcher.batcher.add(.rescanAll, now: now)
            batcher.nextPoll = now + options.pollInterval
        }
        guard !paused, let batch = batcher.batcher.take(now: now) else { return }
        switch batch {
        case .everything:
            log.debug("pass: everything (a rescan)")
            loadIgnoreRules()
            batcher.reportedGone = []
            engine.sync(nil)
            workSinceTrim += Self.trimAfterWork
        case .paths(let paths):
            log.debug("pass: \(paths.count) path(s) the watchers reported\(paths.first.map { ", such as \($0)" } ?? "")")
            if paths.contains(RootMarkers.ignoreFile) { loadIgnoreRules() }
            engine.sync(paths, reportedGone: batcher.reportedGone)
            batcher.reportedGone.subtract(paths)
            workSinceTrim += paths.count
        }
        if !isHalted { restartMissingWatchers() }
        pruneVersionsIfDue(now: now, afterFullScan: batch == .everything)
        let line = statusLine()
        if line != lastStatus {
            lastStatus = line
            notifier.status(line)
        }
    }

    var isHalted: Bool { engine.status.isHalted }

    /// The versions store is pruned after full scans (at most every ten minutes), and at
    /// once when it grew past its size limit.
    func pruneVersionsIfDue(now: MonotonicInstant, afterFullScan: Bool) {
        let status = engine.status
        let overLimit = engine.settings.versionsMaxSize.map { status.versionsBytes > $0 } ?? false
        guard !isHalted, overLimit || (afterFullScan && now >= nextPrune) else { return }
        engine.pruneVersions()
        nextPrune = now + Self.pruneInterval
    }
}
