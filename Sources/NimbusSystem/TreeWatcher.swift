import Glibc
import NimbusVocabulary
import Synchronization

/// Watches a directory tree with inotify: the root and every directory below it get a watch,
/// directories that appear later are watched as they appear, and events come back in batches
/// with paths relative to the root (DESIGN §4, §5, §8).
///
/// Symlinks are never followed and Nimbus's temporary files (`TemporaryName`) are never
/// reported. Events are hints: after `overflow` or `watchLimitReached` the caller scans.
///
/// One thread consumes events with `next(timeout:)`; any thread may call `wake()` or `close()`
/// meanwhile. (Calls to `next` from several threads are safe too, but take turns.)
public final class TreeWatcher: Sendable {
    public struct Options: Sendable {
        /// Report `opened` when a file is opened (`IN_OPEN`), for hydrate-on-open of
        /// placeholders (DESIGN §5). Off by default: every read of every file is an event.
        public var reportsOpens: Bool
        /// Directories that are neither watched nor reported, with everything below them
        /// (the cloud's `.nimbus` folder, ignored directories). Asked about directories only.
        public var exclude: @Sendable (RelativePath) -> Bool
        /// How long `next` lets a burst gather after its first event before reading it. While
        /// the thread waits for that rather than for inotify, the kernel queues events without
        /// waking it: a writer making a thousand files (nimbusd's own sync among them) pays for
        /// a few wake-ups of this thread, not one per event. `wake()` ends the gathering at once
        /// (the events are read and returned). Zero reads each event as it comes.
        public var gathering: Duration

        public init(reportsOpens: Bool = false, gathering: Duration = .zero,
                    exclude: @escaping @Sendable (RelativePath) -> Bool = { _ in false }) {
            self.reportsOpens = reportsOpens
            self.gathering = gathering
            self.exclude = exclude
        }
    }

    public let root: SystemPath
    /// nil once closed. Held by `next` for its whole wait.
    private let tree: Mutex<WatchedTree?>
    private let wakeSignal: WakeSignal
    /// Copied from the tree after each change, so that reading it never waits for `next`.
    private let watchCount: Atomic<Int>
    /// `Options.gathering` in nanoseconds (an atomic holds no `Duration`); 0 for none, or after
    /// `stopGathering`.
    private let gatheringNanoseconds: Atomic<Int64>

    /// Watches `root` and every directory below it. Directories that could not be watched
    /// for lack of inotify watches are reported by the first `next` as `watchLimitReached`;
    /// when not even the root can be watched this throws `WatchLimitReached`.
    public init(root: SystemPath, options: Options = Options()) throws {
        let watched = try WatchedTree(root: root, options: options)
        do {
            wakeSignal = try WakeSignal()
        } catch {
            watched.close()
            throw error
        }
        self.root = root
        gatheringNanoseconds = Atomic(max(0, options.gathering.nanosecondCount))
        watchCount = Atomic(watched.directories.count)
        tree = Mutex(watched)
    }

    deinit { close() }

    /// Waits until something happens below the root and returns what happened, in order.
    /// Returns an empty batch when `timeout` passes first (nil waits without limit) or when
    /// `wake()` is called. The wait is a `poll(2)`: no CPU is used while nothing happens.
    /// Throws after `close()`; after any other error some events may be lost, as after
    /// `overflow`, so the caller rescans.
    public func next(timeout: Duration? = nil) throws -> [WatchEvent] {
        let deadline = timeout.map { ContinuousClock.now.advanced(by: $0) }
        return try tree.withLock { tree in
            guard var watched = tree.take() else { throw Errno.badFileDescriptor.at("watch", root) }
            defer {
                watchCount.store(watched.directories.count, ordering: .relaxed)
                tree = watched
            }
            if let limit = watched.takeLimitReached() { return [limit] }
            while true {
                let ready = try wait(for: watched.inotify.descriptor, until: deadline)
                var woken = ready.woken
                let gathering = Duration.nanoseconds(gatheringNanoseconds.load(ordering: .relaxed))
                if ready.events && !woken && gathering > .zero { woken = try gather(for: gathering) }
                let events = ready.events ? try watched.readEvents() : []
                if ready.woken { wakeSignal.acknowledge() }
                // A wake taken while gathering returns too, even when every event read was one
                // that is not reported (a temporary file's): `close()` waits for this return,
                // holding nothing, and a wake is not given twice.
                if !events.isEmpty || woken || !ready.events { return events }
            }
        }
    }

    /// Makes a blocked `next` return an empty batch now (or the next call, when none is
    /// blocked), for instance to stop the thread that waits. Callable from any thread.
    public func wake() { wakeSignal.wake() }

    /// Releases the inotify instance and all its watches. A `next` blocked meanwhile returns
    /// first; later calls throw. Callable from any thread, any number of times.
    public func close() {
        wakeSignal.wake()
        tree.withLock { tree in tree.take()?.close() }
        watchCount.store(0, ordering: .relaxed)
        wakeSignal.close()
    }

    /// Reads each event as it comes from now on; a gathering under way ends at once. Callable
    /// from any thread.
    public func stopGathering() {
        gatheringNanoseconds.store(0, ordering: .relaxed)
        wake()
    }

    /// How many directories have a watch, as of the last `next`. Never waits.
    public var watchedDirectoryCount: Int { watchCount.load(ordering: .relaxed) }

    /// Lets events gather for `period`, or until `wake()`; true when woken.
    private func gather(for period: Duration) throws -> Bool {
        var fds = [pollfd(fd: wakeSignal.readEnd.rawValue, events: Int16(POLLIN), revents: 0)]
        do {
            _ = try Sys.poll(&fds, period)
        } catch let errno as Errno {
            throw errno.at("poll", root)
        }
        // The wake is taken: the events read now are what the waker wanted to see returned.
        guard fds[0].revents != 0 else { return false }
        wakeSignal.acknowledge()
        return true
    }

    private func wait(for inotify: FileDescriptor,
                      until deadline: ContinuousClock.Instant?) throws -> (events: Bool, woken: Bool) {
        var fds = [pollfd(fd: inotify.rawValue, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wakeSignal.readEnd.rawValue, events: Int16(POLLIN), revents: 0)]
        do {
            _ = try Sys.poll(&fds, deadline.map { ContinuousClock.now.duration(to: $0) })
        } catch let errno as Errno {
            throw errno.at("poll", root)
        }
        return (fds[0].revents != 0, fds[1].revents != 0)
    }
}

/// Wakes a thread blocked in `poll`: a pipe that holds at most one byte, so that `wake()`
/// never blocks on a full pipe however often it is called.
private final class WakeSignal: Sendable {
    let readEnd: FileDescriptor
    private let writeEnd: FileDescriptor
    private let state = Mutex((pending: false, closed: false))

    init() throws {
        let (read, write) = try Sys.pipe()
        readEnd = FileDescriptor(rawValue: read)
        writeEnd = FileDescriptor(rawValue: write)
    }

    func wake() {
        state.withLock { state in
            guard !state.closed, !state.pending else { return }
            state.pending = (try? writeEnd.writeAll([1])) != nil
        }
    }

    /// Empties the pipe after `poll` saw it readable.
    func acknowledge() {
        state.withLock { state in
            guard state.pending else { return }
            var byte: UInt8 = 0
            _ = try? withUnsafeMutableBytes(of: &byte) { try readEnd.read(into: $0) }
            state.pending = false
        }
    }

    func close() {
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            try? readEnd.close()
            try? writeEnd.close()
        }
    }
}
