import NimbusSystem
import NimbusVocabulary

/// The reader thread's loop. It sleeps in one `poll` on the fanotify group and the wake-up
/// pipe, with a timeout only while a reader waits for its fill (until the first of them is
/// overdue): an idle server never wakes up (README, "idle CPU"), and `stop` wakes it at once.
extension HydrationServer {
    func serve() {
        defer { stopped.signal() }
        var polls = PollSet()
        polls.set(group.descriptor, .readable)
        polls.set(wake.readEnd, .readable)
        var failures = 0
        while !stopping.load(ordering: .acquiring) {
            do {
                let ready = try polls.wait(timeout: nextOverdueDeadline().map { $0 - now() })
                wakeUps.add(1, ordering: .relaxed)
                if ready.contains(where: { $0.0 == wake.readEnd }) { wake.drain() }
                if ready.contains(where: { $0.0 == group.descriptor }) {
                    for event in try group.readEvents() { handle(event) }
                }
                answerOverdueReaders()
                failures = 0
            } catch {
                failures += 1
                log.error("real-name placeholders: cannot read the kernel's events: \(error)")
                pauseAfter(failures: failures)
            }
        }
    }

    /// A failing group (a bug, or the kernel short of memory) is tried again after 0.2 s,
    /// twice as long after each failure in a row up to 10 s, so that a lasting failure
    /// neither spins nor floods the log; a stop still ends the wait at once.
    private func pauseAfter(failures: Int) {
        let delay = Duration.milliseconds(200 << min(failures - 1, 6))
        let wait = min(delay, .seconds(10))
        var stopOnly = PollSet()
        stopOnly.set(wake.readEnd, .readable)
        if (try? stopOnly.wait(timeout: wait)) == nil { ProcessSupport.pause(for: wait) }
    }

    /// When the reader waiting longest for its fill passes `fillTimeout`; nil when none waits.
    func nextOverdueDeadline() -> MonotonicInstant? {
        let limit = settings.withLock { $0.fillTimeout }
        let oldest = inFlight.withLock { running in running.values.lazy.flatMap { $0 }.map(\.since).min() }
        return oldest.map { $0 + limit }
    }

    /// Readers that waited longer than `fillTimeout` get `EIO` (logged once per fill): a reader
    /// never waits forever for a cloud that hangs. The fill goes on through its own
    /// descriptor; readers that come later join it and wait their own time.
    func answerOverdueReaders() {
        let limit = settings.withLock { $0.fillTimeout }
        let moment = now()
        let expired = inFlight.withLock { running -> [(FileIdentity, [Waiter])] in
            var expired: [(FileIdentity, [Waiter])] = []
            for (identity, waiting) in running {
                let overdue = waiting.filter { moment - $0.since >= limit }
                guard !overdue.isEmpty else { continue }
                running[identity] = waiting.filter { moment - $0.since < limit }
                expired.append((identity, overdue))
            }
            return expired
        }
        for (identity, overdue) in expired {
            if slowLogged.withLock({ $0.insert(identity).inserted }) {
                let path = placeholders.withLock { $0[identity]?.path }
                log.warning("fetching \(path.map { "\($0)" } ?? "a not-downloaded file") takes longer than fill-timeout = "
                            + "\(limit.wholeSeconds) s: its readers get EIO; the fetch goes on")
            }
            for waiter in overdue { answer(waiter.event, .deny(.ioError)) }
        }
    }
}
