import Synchronization
import Testing
import NimbusSimulation
@testable import NimbusDaemon

/// `status.lastError` and the watchers' `error` event tell the present, as the log does since
/// `LogRepetitionTests`: a failure is sent when it starts or changes, not at each retry, and
/// once it is over (the file synced, or went) status no longer shows it. Before, the event
/// came at every retry and `lastError` stayed until the daemon restarted.
@Suite struct CurrentFailureTests {
    /// Every retry due, then a pass over everything, `rounds` times.
    static func retry(_ pair: Pair, rounds: Int) {
        for _ in 0..<rounds {
            pair.clock.advance(by: .minutes(5))
            pair.engine.sync(pair.engine.dueRetries())
            pair.engine.sync(nil)
        }
    }

    @Test func lastErrorShowsAFailureThatLastsNotOneThatIsOver() throws {
        let pair = Pair()
        try pair.local.writeFile(rp("a.txt"), contents: Array("a".utf8), mode: 0o200)
        try pair.local.writeFile(rp("b.txt"), contents: Array("b".utf8), mode: 0o200)
        try pair.local.writeFile(rp("c.txt"), contents: Array("c".utf8), mode: 0o200)
        pair.engine.start()
        #expect(pair.engine.errorCount == 3)
        let first = try #require(pair.engine.status.lastError, "status tells the failure")
        let shown = try #require(["a.txt", "b.txt", "c.txt"].first { first.contains("open \($0)") }, "\(first)")
        let others = ["a.txt", "b.txt", "c.txt"].filter { $0 != shown }

        // The failure shown is fixed: status shows one that lasts.
        try pair.local.setAttributes(rp(shown), mode: 0o600, mtime: nil)
        Self.retry(pair, rounds: 1)
        #expect(pair.content(pair.cloud, shown) == String(shown.prefix(1)), "\(shown) synced")
        #expect(pair.engine.errorCount == 2)
        let now = try #require(pair.engine.status.lastError, "two files still fail")
        #expect(others.contains { now.contains("open \($0)") }, "\(now) is a failure that lasts")

        // One goes, the other is fixed: nothing fails, nothing is shown.
        try pair.local.removeFile(rp(others[0]))
        try pair.local.setAttributes(rp(others[1]), mode: 0o600, mtime: nil)
        Self.retry(pair, rounds: 1)
        #expect(pair.engine.errorCount == 0)
        #expect(pair.engine.status.lastError == nil, "no failure lasts: \(pair.engine.status.lastError ?? "")")

        // A new failure is shown again.
        try pair.local.writeFile(rp("d.txt"), contents: Array("d".utf8), mode: 0o200)
        pair.sync()
        #expect(pair.engine.status.lastError?.contains("open d.txt") == true)
    }

    /// A folder that cannot be read is shown in error (`tellUnreadable`) until it is read again,
    /// and then no longer as the last error either.
    @Test func anUnreadableFolderIsNoLongerTheLastErrorOnceReadAgain() throws {
        let pair = Pair()
        try pair.local.write(rp("d/a"), Array("one".utf8))
        pair.engine.start()
        try pair.local.setAttributes(rp("d"), mode: 0o000, mtime: nil)
        pair.sync()
        #expect(pair.engine.status.lastError?.contains("cannot read d in the local folder") == true, "\(pair.engine.status.lastError ?? "")")
        try pair.local.setAttributes(rp("d"), mode: 0o755, mtime: nil)
        pair.sync()
        #expect(pair.engine.errorCount == 0)
        #expect(pair.engine.status.lastError == nil, "\(pair.engine.status.lastError ?? "")")
    }

    @Test func anErrorEventIsSentWhenAFailureStartsOrChangesNotAtEachRetry() throws {
        let pair = Pair()
        let events = Mutex<[EngineEvent]>([])
        pair.engine.onEvent { event in events.withLock { $0.append(event) } }
        defer { pair.engine.onEvent(nil) }
        let errors = { events.withLock { $0.filter { if case .error = $0 { true } else { false } } } }
        try pair.local.writeFile(rp("secret.txt"), contents: Array("secret".utf8), mode: 0o200)
        pair.engine.start()
        Self.retry(pair, rounds: 5)
        #expect(errors().count == 1, "one failure, one event: \(errors())")
        #expect(pair.engine.errorCount == 1 && pair.engine.status.lastError != nil, "still failing, still shown")

        // Fixed: a state event tells it is over.
        events.withLock { $0.removeAll() }
        try pair.local.setAttributes(rp("secret.txt"), mode: 0o600, mtime: nil)
        Self.retry(pair, rounds: 1)
        #expect(events.withLock { $0 }.contains(.stateChanged(rp("secret.txt"), .downloaded)), "\(events.withLock { $0 })")
        #expect(errors().isEmpty)

        // Failing again after it synced: a new failure, sent again.
        try pair.local.writeFile(rp("secret.txt"), contents: Array("changed".utf8), mode: 0o200)
        Self.retry(pair, rounds: 3)
        #expect(errors().count == 1, "\(errors())")
    }
}
