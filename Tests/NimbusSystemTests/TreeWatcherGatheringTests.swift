import Foundation
import Glibc
import NimbusVocabulary
import Synchronization
import Testing
import NimbusSystem
import NimbusTestSupport

/// `TreeWatcher.Options.gathering`: a burst that starts while the watcher waits in `poll` is
/// read in one batch, not one wake-up per event (nimbusd's own sync is such a burst).
struct TreeWatcherGatheringTests {
    static let files = 50

    @Test func aBurstStartedWhileWaitingIsReadInOneBatch() throws {
        let root = try TemporaryDirectory.make("nimbus-gather")
        defer { TemporaryDirectory.remove(root, label: "aBurstStartedWhileWaitingIsReadInOneBatch") }
        // Two seconds, where nimbusd gathers for milliseconds: the writer below has that long
        // to make its files, which a loaded machine needs, and the test only reads one batch.
        let watcher = try TreeWatcher(root: SystemPath(root), options: .init(gathering: .seconds(2)))
        defer { watcher.close() }

        let reader = try Self.threadID()
        let written = Mutex<(any Error)?>(nil)
        let writer = Thread {
            do {
                // The burst must begin while the reader is blocked in poll, so that the first
                // event is the one that wakes it.
                try Polling.wait("the reader to wait in poll") { try Self.isWaitingInPoll(reader) }
                for index in 0..<Self.files {
                    try Self.create("\(root)/f\(index)")
                }
            } catch {
                written.withLock { $0 = error }
            }
        }
        writer.start()
        let batch = try watcher.next(timeout: .seconds(30))
        if let error = written.withLock({ $0 }) { throw error }

        let closed = Set(batch.filter { $0.kind == .closedWrite }.map(\.path.description))
        let missing = (0..<Self.files).map { "f\($0)" }.filter { !closed.contains($0) }
        #expect(missing.isEmpty, "the first batch (\(batch.count) events) lacks the close of \(missing.count) files, first \(missing.prefix(3))")
    }

    /// `wake()` ends the gathering under way, and the events come back.
    @Test(.timeLimit(.minutes(1))) func wakeEndsTheGatheringAndTheEventsComeBack() throws {
        try Self.gatheringForAnHour { watcher, root in
            let batch = try Self.nextEndingTheGathering(watcher) { $0.wake() }
            #expect(batch.contains { $0.kind == .closedWrite && $0.path.description == "f" }, "\(batch)")
        }
    }

    /// `stopGathering()` (nimbusd's, after its first pass) ends a gathering under way, and the
    /// next event is read as it comes.
    @Test(.timeLimit(.minutes(1))) func stopGatheringEndsItForGood() throws {
        try Self.gatheringForAnHour { watcher, root in
            let first = try Self.nextEndingTheGathering(watcher) { $0.stopGathering() }
            #expect(first.contains { $0.kind == .closedWrite && $0.path.description == "f" }, "\(first)")
            try Self.create("\(root)/g")
            // Read as it comes: the first batch that holds anything holds it, long before an hour.
            var later: [WatchEvent] = []
            while later.isEmpty { later = try watcher.next(timeout: .seconds(30)) }
            #expect(later.contains { $0.kind == .closedWrite && $0.path.description == "g" }, "\(later)")
        }
    }

    /// A watcher that would gather for an hour (the tests' time limit fails them first), with
    /// the events of a file `f` queued.
    static func gatheringForAnHour(_ body: (TreeWatcher, String) throws -> Void) throws {
        let root = try TemporaryDirectory.make("nimbus-gather")
        defer { TemporaryDirectory.remove(root, label: "gatheringForAnHour") }
        let watcher = try TreeWatcher(root: SystemPath(root), options: .init(gathering: .seconds(3600)))
        defer { watcher.close() }
        try create("\(root)/f")
        try body(watcher, root)
    }

    /// `next()`, with `end` called from another thread once this one gathers: the events are
    /// queued already, so its poll is the gathering's.
    static func nextEndingTheGathering(_ watcher: TreeWatcher, _ end: @escaping @Sendable (TreeWatcher) -> Void) throws -> [WatchEvent] {
        let reader = try threadID()
        let ender = Thread {
            try? Polling.wait("the reader to gather") { try isWaitingInPoll(reader) }
            end(watcher)
        }
        ender.start()
        return try watcher.next(timeout: nil)
    }

    static func create(_ path: String) throws {
        let file = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard file >= 0 else { throw HarnessFailure("cannot create \(path): errno \(errno)") }
        close(file)
    }

    /// A wake during the gathering returns even when no event read is reported (a temporary
    /// file's are not). Before, `next` waited again, holding its lock, with the wake taken:
    /// `close()` then waited for it for ever, and nimbusd did not stop on SIGTERM.
    @Test func aWakeWhileGatheringOnlyUnreportedEventsReturns() throws {
        let root = try TemporaryDirectory.make("nimbus-gather")
        defer { TemporaryDirectory.remove(root, label: "aWakeWhileGatheringOnlyUnreportedEventsReturns") }
        let watcher = try TreeWatcher(root: SystemPath(root), options: .init(gathering: .seconds(3600)))
        defer { watcher.close() }
        let file = open("\(root)/.nimbus-tmp-0123456789abcdef", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(file >= 0)
        close(file)

        // A thread of its own, so that "in poll" means this wait and nothing else.
        let reader = Mutex<String?>(nil)
        let batch = Mutex<[WatchEvent]?>(nil)
        let returned = DispatchSemaphore(value: 0)
        Thread {
            reader.withLock { $0 = try? Self.threadID() }
            let events = try? watcher.next(timeout: nil)
            batch.withLock { $0 = events }
            returned.signal()
        }.start()
        try Polling.wait("the reader to gather") {
            guard let id = reader.withLock({ $0 }) else { return false }
            return try Self.isWaitingInPoll(id)
        }
        watcher.wake()
        let woke = returned.wait(timeout: .now() + 30) == .success
        if !woke {
            watcher.wake()  // Lets the lost reader go, so that the watcher can close.
            _ = returned.wait(timeout: .now() + 30)
        }
        #expect(woke, "the wake was taken while gathering and next() waited again")
        #expect(batch.withLock { $0 } == [], "\(String(describing: batch.withLock { $0 }))")
    }

    /// This thread's id: /proc/thread-self links to PID/task/TID.
    static func threadID() throws -> String {
        try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self").split(separator: "/").last.map(String.init) ?? "?"
    }

    /// Whether thread `tid` of this process sleeps in poll(2): the kernel function it waits in
    /// (`poll_schedule_timeout`) names it.
    static func isWaitingInPoll(_ tid: String) throws -> Bool {
        try String(contentsOfFile: "/proc/self/task/\(tid)/wchan", encoding: .utf8).contains("poll")
    }
}
