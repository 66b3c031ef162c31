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
    @Test func reportsTheLifeOfAFile() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        let watcher = try TreeWatcher(root: scratch.root)
        defer { watcher.close() }

        try scratch.write("f", "hello")
        let written = try watcher.collect { $0.has(.closedWrite, "f") }
        #expect(written.has(.created, "f", directory: false))
        #expect(written.has(.modified, "f", directory: false))

        try scratch.cwd.setPermissions(of: scratch.path("f"), 0o600)
        try watcher.collect { $0.has(.attributesChanged, "f", directory: false) }

        try scratch.cwd.removeFile(scratch.path("f"))
        try watcher.collect { $0.has(.deleted, "f", directory: false) }
    }

    @Test func watchesNewDirectoriesAndForgetsRemovedOnes() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        let watcher = try TreeWatcher(root: scratch.root)
        defer { watcher.close() }

        try scratch.makeDirectories("d")
        try watcher.collect { $0.has(.created, "d", directory: true) }
        try scratch.write("d/f")
        try watcher.collect { $0.has(.closedWrite, "d/f") }
        #expect(watcher.watchedDirectoryCount == 2)

        try scratch.cwd.removeFile(scratch.path("d/f"))
        try scratch.cwd.removeDirectory(scratch.path("d"))
        let events = try watcher.collect(sentinel: scratch)
        #expect(events.has(.deleted, "d/f", directory: false))
        #expect(events.has(.deleted, "d", directory: true))
        #expect(watcher.watchedDirectoryCount == 1)
    }

    /// `mkdir -p a/b/c` followed at once by files inside: the files are made before the
    /// watcher has even seen `a`, so they must come from the listing of the new directories.
    @Test func reportsFilesMadeInNewDirectoriesBeforeTheyWereWatched() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        let watcher = try TreeWatcher(root: scratch.root)
        defer { watcher.close() }

        var expected: [String] = []
        for tree in 0..<10 {
            try scratch.makeDirectories("t\(tree)/a/b/c")
            for file in ["t\(tree)/a/f1", "t\(tree)/a/b/f2", "t\(tree)/a/b/c/f3"] {
                try scratch.write(file)
                expected.append(file)
            }
        }
        let events = try watcher.collect { events in
            expected.allSatisfy { events.has(.created, $0, directory: false) }
        }
        #expect(events.has(.created, "t9/a/b/c", directory: true))

        try scratch.write("t0/a/b/c/f3", "again")
        try scratch.write("t9/a/b/c/new")
        try watcher.collect { $0.has(.closedWrite, "t0/a/b/c/f3") && $0.has(.created, "t9/a/b/c/new") }
    }

    @Test func pairsRenamesInsideTheTreeAndFollowsRenamedDirectories() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        try scratch.makeDirectories("d/inner")
        try scratch.write("d/inner/f")
        try scratch.write("x")
        let watcher = try TreeWatcher(root: scratch.root)
        defer { watcher.close() }

        try scratch.cwd.rename(scratch.path("x"), to: scratch.path("y"))
        try scratch.cwd.rename(scratch.path("d"), to: scratch.path("e"))
        let events = try watcher.collect { $0.cookie(of: "e") != nil && $0.cookie(of: "y") != nil }
        #expect(events.cookie(of: "x") == events.cookie(of: "y"))
        let paired = events.pairingMoves()
        #expect(paired.has(.moved(from: treePath("x")), "y", directory: false))
        #expect(paired.has(.moved(from: treePath("d")), "e", directory: true))
        #expect(!paired.contains { if case .movedFrom = $0.kind { true } else { false } })

        try scratch.write("e/inner/g")
        let later = try watcher.collect { $0.has(.created, "e/inner/g", directory: false) }
        #expect(!later.contains { treePath("d").contains($0.path) })
        #expect(watcher.watchedDirectoryCount == 3)
    }

    @Test func aDirectoryMovedOutIsReportedOnceAndNoLongerWatched() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        try scratch.makeDirectories("tree/d/sub")
        try scratch.makeDirectories("outside")
        let watcher = try TreeWatcher(root: scratch.path("tree"))
        defer { watcher.close() }

        try scratch.cwd.rename(scratch.path("tree/d"), to: scratch.path("outside/d"))
        let events = try watcher.collect { $0.cookie(of: "d") != nil }.pairingMoves()
        #expect(events.has(.movedFrom(cookie: events.cookie(of: "d")!), "d", directory: true))

        try scratch.write("outside/d/sub/later")
        let after = try watcher.collect(sentinel: scratch, in: "tree")
        #expect(!after.contains { treePath("d").contains($0.path) })
        #expect(watcher.watchedDirectoryCount == 1)
    }

    @Test func aDirectoryMovedInIsReportedWithItsContentsAndWatched() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        try scratch.makeDirectories("tree")
        try scratch.makeDirectories("outside/n/sub")
        try scratch.write("outside/n/sub/f")
        let watcher = try TreeWatcher(root: scratch.path("tree"))
        defer { watcher.close() }

        try scratch.cwd.rename(scratch.path("outside/n"), to: scratch.path("tree/n"))
        let events = try watcher.collect { $0.has(.created, "n/sub/f", directory: false) }.pairingMoves()
        #expect(events.has(.movedTo(cookie: events.cookie(of: "n")!), "n", directory: true))
        #expect(events.has(.created, "n/sub", directory: true))

        try scratch.write("tree/n/sub/g")
        try watcher.collect { $0.has(.created, "n/sub/g", directory: false) }
    }

    @Test func namesThatAreNotUTF8ArriveWithTheirExactBytes() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        let watcher = try TreeWatcher(root: scratch.root)
        defer { watcher.close() }

        let file: [UInt8] = [0x66, 0xFF, 0xFE]
        let directory: [UInt8] = [0x64, 0xC3, 0x28]
        let inner: [UInt8] = [0xE9]
        try scratch.write(SystemPath(bytes: file))
        try scratch.cwd.makeDirectory(scratch.root.appending(SystemPath(bytes: directory)))
        try scratch.write(SystemPath(bytes: directory + [UInt8(ascii: "/")] + inner))

        let innerPath = try RelativePath(validating: directory + [UInt8(ascii: "/")] + inner)
        let events = try watcher.collect { $0.contains { $0.kind == .created && $0.path == innerPath } }
        #expect(events.contains { $0.kind == .created && $0.path.bytes == file && !$0.isDirectory })
        #expect(events.contains { $0.kind == .created && $0.path.bytes == directory && $0.isDirectory })
    }

    @Test func excludedDirectoriesAreNeitherWatchedNorReported() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        try scratch.makeDirectories(".nimbus/versions")
        let options = TreeWatcher.Options(exclude: { $0.name == Array(".nimbus".utf8) })
        let watcher = try TreeWatcher(root: scratch.root, options: options)
        defer { watcher.close() }

        try scratch.write(".nimbus/x")
        try scratch.write(".nimbus/versions/y")
        try scratch.makeDirectories("a/.nimbus")
        try scratch.write("a/.nimbus/z")
        try scratch.write("a/kept")
        let events = try watcher.collect(sentinel: scratch)
        #expect(events.has(.created, "a/kept", directory: false))
        #expect(!events.contains { $0.path.components.contains(Array(".nimbus".utf8)) })
        #expect(watcher.watchedDirectoryCount == 2)
    }

    @Test func temporaryFilesOfNimbusAreNotReported() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        let watcher = try TreeWatcher(root: scratch.root)
        defer { watcher.close() }

        try scratch.write(".nimbus-tmp-1234")
        try scratch.cwd.rename(scratch.path(".nimbus-tmp-1234"), to: scratch.path("final"))
        let events = try watcher.collect { $0.cookie(of: "final") != nil }.pairingMoves()
        #expect(!events.contains { TemporaryName.isTemporary($0.path.name) })
        #expect(events.has(.movedTo(cookie: events.cookie(of: "final")!), "final", directory: false))
    }

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

// MARK: - Reading events

extension TreeWatcher {
    /// Reads batches until `satisfied` holds for all events read so far; after 5 s records an
    /// issue that lists what did arrive.
    @discardableResult
    fileprivate func collect(sourceLocation: SourceLocation = #_sourceLocation,
                             until satisfied: ([WatchEvent]) -> Bool) throws -> [WatchEvent] {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(5)
        var events: [WatchEvent] = []
        while !satisfied(events) {
            guard clock.now < deadline else {
                Issue.record("expected events did not arrive within 5 s; got \(events)", sourceLocation: sourceLocation)
                return events
            }
            events += try next(timeout: clock.now.duration(to: deadline))
        }
        return events
    }

    /// Creates a sentinel file in `directory` of the scratch tree and reads until it is
    /// reported: everything that happened before has been reported by then.
    fileprivate func collect(sentinel scratch: WatchScratch, in directory: String = "",
                             sourceLocation: SourceLocation = #_sourceLocation) throws -> [WatchEvent] {
        let name = "sentinel-\(UInt64.random(in: 0...UInt64.max))"
        try scratch.write(directory.isEmpty ? name : "\(directory)/\(name)")
        return try collect(sourceLocation: sourceLocation) { $0.has(.created, name) }
    }
}

/// A `next(timeout: nil)` running on another thread.
private final class BlockedNext: Sendable {
    enum Outcome: Equatable, Sendable { case events([WatchEvent]), failed }
    let returned = DispatchSemaphore(value: 0)
    let outcome = Mutex<Outcome?>(nil)

    init(_ watcher: TreeWatcher) {
        DispatchQueue.global().async { [self] in
            let result: Outcome = (try? watcher.next(timeout: nil)).map { .events($0) } ?? .failed
            outcome.withLock { $0 = result }
            returned.signal()
        }
    }
}

private func treePath(_ text: String) -> RelativePath {
    try! RelativePath(validating: text)
}

extension [WatchEvent] {
    fileprivate func has(_ kind: WatchEvent.Kind, _ text: String, directory: Bool? = nil) -> Bool {
        contains { $0.kind == kind && $0.path == treePath(text) && (directory == nil || $0.isDirectory == directory) }
    }

    /// The cookie of the first rename half at `text`.
    fileprivate func cookie(of text: String) -> UInt32? {
        for event in self where event.path == treePath(text) {
            switch event.kind {
            case .movedFrom(let cookie), .movedTo(let cookie): return cookie
            default: continue
            }
        }
        return nil
    }

    fileprivate var unwatched: [RelativePath] { flatMap { $0.limitReached?.directories ?? [] } }
}

extension WatchEvent {
    fileprivate var limitReached: WatchLimitReached? {
        if case .watchLimitReached(let limit) = kind { limit } else { nil }
    }
}

// MARK: - Scratch directories and sysctls

/// A unique directory under /tmp. `remove()` deletes it with everything inside.
private struct WatchScratch {
    let root: SystemPath
    /// Operations on absolute paths go through the current-directory descriptor.
    let cwd = FileDescriptor(rawValue: AT_FDCWD)

    init() throws {
        var template = Array("/tmp/nimbus-watch-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw Errno.current }
        root = SystemPath(bytes: template.dropLast().map { UInt8(bitPattern: $0) })
    }

    func path(_ relative: String) -> SystemPath { root.appending(SystemPath(relative)) }

    func write(_ relative: String, _ text: String = "x") throws {
        try write(SystemPath(relative), text)
    }

    func write(_ relative: SystemPath, _ text: String = "x") throws {
        let file = try FileDescriptor.open(root.appending(relative), [.writeOnly, .create, .truncate])
        try file.closeAfter { try file.writeAll(Array(text.utf8)) }
    }

    func removeDirectory(_ relative: String) throws {
        try cwd.removeDirectory(path(relative))
    }

    /// mkdir -p.
    func makeDirectories(_ relative: String) throws {
        var current = root
        for component in relative.split(separator: "/") {
            current = current.appending(SystemPath(String(component)))
            do {
                try cwd.makeDirectory(current)
            } catch let error as Errno where error == .fileExists {
                continue
            }
        }
    }

    func remove() { Self.removeTree(root) }

    /// rm -rf, without following symlinks; names need not be UTF-8.
    static func removeTree(_ path: SystemPath) {
        let cwd = FileDescriptor(rawValue: AT_FDCWD)
        guard let metadata = try? cwd.metadata(of: path) else { return }
        guard metadata.kind == .directory else {
            try? cwd.removeFile(path)
            return
        }
        for name in names(in: path) { removeTree(path.appending(SystemPath(bytes: name))) }
        try? cwd.removeDirectory(path)
    }

    /// The entries of a directory except "." and "..".
    static func names(in path: SystemPath) -> [[UInt8]] {
        guard let directory = try? FileDescriptor.open(path, [.directory, .noFollow]) else { return [] }
        guard let stream = try? Sys.openDirectoryStream(directory.rawValue) else {
            try? directory.close()
            return []
        }
        defer { try? Sys.closeDirectoryStream(stream) }
        var names: [[UInt8]] = []
        while let entry = try? Sys.readDirectoryEntry(stream) {
            if entry.name != Array(".".utf8) && entry.name != Array("..".utf8) { names.append(entry.name) }
        }
        return names
    }
}

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
