import Dispatch
import Glibc
import NimbusVocabulary
import Synchronization
import Testing
@testable import NimbusSystem
import NimbusTestSupport

// Real inotify on real temporary directories. No sleeps: each test reads batches until the
// events it expects have arrived (or 5 s pass). To show that something did NOT happen, a test
// creates a sentinel file afterwards: the kernel queues events in order, so once the sentinel
// is reported everything before it has been too.
//
// Serialized: one test lowers an inotify sysctl (the queue size) for a moment, which would
// give the watchers other tests of this suite create meanwhile a tiny queue.
@Suite(.serialized)
struct TreeWatcherTests {
    @Test func opensOfFilesAreReportedOnlyWhenAskedFor() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        try scratch.makeDirectories("d")
        try scratch.write("d/report.pdf.nimbus")
        let watcher = try TreeWatcher(root: scratch.root, options: .init(reportsOpens: true))
        defer { watcher.close() }

        let opened = try FileDescriptor.open(scratch.path("d/report.pdf.nimbus"))
        try opened.close()
        let events = try watcher.collect(sentinel: scratch)
        #expect(events.has(.opened, "d/report.pdf.nimbus", directory: false))
        #expect(!events.contains { $0.kind == .opened && $0.isDirectory })
    }

    @Test func removingOrMovingTheRootIsReported() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        try scratch.makeDirectories("removed/sub")
        try scratch.makeDirectories("moved")
        let removed = try TreeWatcher(root: scratch.path("removed"))
        defer { removed.close() }
        let moved = try TreeWatcher(root: scratch.path("moved"))
        defer { moved.close() }

        WatchScratch.removeTree(scratch.path("removed"))
        try removed.collect { $0.contains { $0.kind == .rootRemoved } }
        try scratch.cwd.rename(scratch.path("moved"), to: scratch.path("elsewhere"))
        try moved.collect { $0.contains { $0.kind == .rootRemoved } }
    }

    @Test func nextWaitsForItsTimeoutAndWakeEndsTheWait() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        let watcher = try TreeWatcher(root: scratch.root)
        defer { watcher.close() }

        let clock = ContinuousClock()
        let start = clock.now
        #expect(try watcher.next(timeout: .milliseconds(50)).isEmpty)
        #expect(clock.now - start >= .milliseconds(50))

        let blocked = BlockedNext(watcher)
        #expect(blocked.returned.wait(timeout: .now() + .milliseconds(100)) == .timedOut,
                "next returned with nothing to report")
        watcher.wake()
        #expect(blocked.returned.wait(timeout: .now() + 5) == .success)
        #expect(blocked.outcome.withLock { $0 } == .events([]))
    }

    @Test func closeEndsABlockedNextAndLaterCallsThrow() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        let watcher = try TreeWatcher(root: scratch.root)

        let blocked = BlockedNext(watcher)
        watcher.close()
        #expect(blocked.returned.wait(timeout: .now() + 5) == .success)
        #expect(throws: SystemError.self) { try watcher.next(timeout: .zero) }
        watcher.close()
    }

    @Test(.enabled(if: getuid() == 0, "changes /proc/sys/fs/inotify: needs root"))
    func overflowOfTheKernelQueueAsksForARescanAndWatchingGoesOn() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        // The queue size is taken when the instance is created; restore the sysctl right after.
        let watcher = try InotifySysctl.with("fs/inotify/max_queued_events", 16) { try TreeWatcher(root: scratch.root) }
        guard let watcher else { return }
        defer { watcher.close() }

        for file in 0..<40 { try scratch.write("f\(file)") }
        // Its creation cannot fit in the full queue: only the rescan after the overflow finds it.
        try scratch.makeDirectories("during")
        try watcher.collect { $0.contains { $0.kind == .overflow } }

        try scratch.write("during/after")
        try watcher.collect { $0.has(.created, "during/after", directory: false) }
    }

    /// Lowering `fs.inotify.max_user_watches` would starve the daemons other suites run
    /// alongside (and other people's processes): the limit is lowered instead in a user
    /// namespace of its own (`user.max_inotify_watches` counts per namespace, and a new one
    /// counts none yet), in which this test runs again in a child process.
    @Test(.enabled(if: WatchLimitNamespace.isInside || WatchLimitNamespace.canRun,
                   "needs a user namespace (unshare --user --map-root-user) to lower the inotify watch limit for this test alone"))
    func runningOutOfWatchesNamesTheSysctlAndTheWatchedDirectoriesStillReport() throws {
        guard WatchLimitNamespace.isInside else {
            return try WatchLimitNamespace.runAgainInside("TreeWatcherTests/runningOutOfWatchesNamesTheSysctlAndTheWatchedDirectoriesStillReport")
        }
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        for directory in 0..<60 { try scratch.makeDirectories("d\(directory)") }

        // Only this process watches anything in this namespace: 20 watches, no more.
        var atStart: [WatchEvent] = []
        var later: [WatchEvent] = []
        let found = try InotifySysctl.with("user/max_inotify_watches", 20, { () throws -> TreeWatcher in
            let watcher = try TreeWatcher(root: scratch.root)
            atStart = try watcher.next(timeout: .seconds(1))
            try scratch.makeDirectories("late")
            later = try watcher.collect { !$0.unwatched.isEmpty }
            return watcher
        })
        print(WatchLimitNamespace.ranInside)
        guard let watcher = found else { return }
        defer { watcher.close() }

        let limit = try #require(atStart.first?.limitReached)
        #expect(limit.directories.count + watcher.watchedDirectoryCount == 61)
        #expect(watcher.watchedDirectoryCount >= 2)
        #expect(limit.description.contains("fs.inotify.max_user_watches"))
        #expect(limit.description.contains("sysctl fs.inotify.max_user_watches=524288"))
        #expect(later.unwatched == [treePath("late")])

        let watched = try #require((0..<60).map { treePath("d\($0)") }.first { !limit.directories.contains($0) })
        try scratch.write(watched.description + "/f")
        try scratch.write("g")
        try watcher.collect { $0.has(.created, watched.description + "/f") && $0.has(.created, "g") }
    }

    @Test func movePairingJoinsHalvesByCookieAndKeepsTheRest() {
        let events = [
            WatchEvent(.movedFrom(cookie: 7), treePath("a"), isDirectory: true),
            WatchEvent(.created, treePath("a"), isDirectory: false),
            WatchEvent(.movedTo(cookie: 7), treePath("b"), isDirectory: true),
            WatchEvent(.movedFrom(cookie: 8), treePath("gone"), isDirectory: false),
            WatchEvent(.movedTo(cookie: 9), treePath("came"), isDirectory: false),
        ]
        #expect(events.pairingMoves() == [
            WatchEvent(.moved(from: treePath("a")), treePath("b"), isDirectory: true),
            WatchEvent(.created, treePath("a"), isDirectory: false),
            WatchEvent(.movedFrom(cookie: 8), treePath("gone"), isDirectory: false),
            WatchEvent(.movedTo(cookie: 9), treePath("came"), isDirectory: false),
        ])
    }
}

// MARK: - Sysctls

private enum InotifySysctl {
    /// Sets /proc/sys/`name` to `value` while `body` runs, and restores the old value
    /// afterwards whatever happens. When the value cannot be written, records an issue (the
    /// test then fails saying why) and returns nil.
    static func with<R>(_ name: String, _ value: Int, sourceLocation: SourceLocation = #_sourceLocation,
                        _ body: () throws -> R) throws -> R? {
        let file = SystemPath("/proc/sys/\(name)")
        let old = try readNumber(file)
        do {
            try writeNumber(value, to: file)
        } catch {
            Issue.record("cannot set \(file) to \(value) (\(error)); this test needs root and a writable /proc/sys",
                         sourceLocation: sourceLocation)
            return nil
        }
        defer {
            do {
                try writeNumber(old, to: file)
            } catch {
                Issue.record("could not restore \(file) to \(old) (\(error)); restore it by hand",
                             sourceLocation: sourceLocation)
            }
        }
        return try body()
    }

    private static func readNumber(_ file: SystemPath) throws -> Int {
        let descriptor = try FileDescriptor.open(file)
        let text = try descriptor.closeAfter { try descriptor.readAll() }
        return Int(String(decoding: text.filter { $0 != UInt8(ascii: "\n") }, as: UTF8.self)) ?? 0
    }

    private static func writeNumber(_ value: Int, to file: SystemPath) throws {
        let descriptor = try FileDescriptor.open(file, .writeOnly)
        try descriptor.closeAfter { try descriptor.writeAll(Array("\(value)\n".utf8)) }
    }
}

/// Runs a test of this target again, alone, in a child process inside a new user namespace
/// (`unshare --user --map-root-user`), where it may lower the namespace's own limits.
private enum WatchLimitNamespace {
    static let variable = "NIMBUS_TEST_IN_OWN_USER_NAMESPACE"
    /// Printed by the test inside, so that a filter matching nothing is not taken for a pass.
    static let ranInside = "watch-limit test ran in its own user namespace"

    static var isInside: Bool { getenv(variable) != nil }

    /// Whether a user namespace can be made here and its watch limit set.
    static let canRun: Bool = {
        let probe = try? ShellCommand.run("unshare --user --map-root-user sh -c 'echo 100 > /proc/sys/user/max_inotify_watches'", timeout: .seconds(30))
        return probe?.status == 0
    }()

    static func runAgainInside(_ filter: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let executable = try readlinkText("/proc/self/exe")
        let command = "exec unshare --user --map-root-user env \(variable)=1 \(quoted(executable))"
            + " --testing-library swift-testing --filter \(quoted(filter)) 2>&1"
        let run = try ShellCommand.run(command, timeout: .seconds(300))
        #expect(run.status == 0 && run.output.contains(ranInside),
                "the test run in its own user namespace failed (exit \(run.status)): \(command)\n\(run.output)\(run.error)",
                sourceLocation: sourceLocation)
    }

    private static func readlinkText(_ path: String) throws -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink(path, &buffer, buffer.count - 1)
        guard length > 0 else { throw Errno(rawValue: errno).at("readlink", path) }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
