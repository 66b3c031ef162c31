import Dispatch
import Foundation
import NimbusVocabulary
import Synchronization
import NimbusCore
import NimbusSimulation
import NimbusSystem
import NimbusTestSupport
@testable import NimbusDaemon

/// A watcher the test feeds: `push` hands events to the runtime's watcher thread.
final class FakeWatcher: TreeWatching {
    private let queue = Mutex<(events: [WatchEvent], closed: Bool)>(([], false))
    private let arrived = DispatchSemaphore(value: 0)

    struct Closed: Error {}

    func push(_ events: [WatchEvent]) {
        queue.withLock { $0.events += events }
        arrived.signal()
    }

    func next(timeout: Duration?) throws -> [WatchEvent] {
        while true {
            let (events, closed) = queue.withLock { state in
                defer { state.events = [] }
                return (state.events, state.closed)
            }
            if !events.isEmpty { return events }
            if closed { throw Closed() }
            arrived.wait()
        }
    }

    func wake() { arrived.signal() }

    func close() {
        queue.withLock { $0.closed = true }
        arrived.signal()
    }
}

/// A `PairRuntime` in memory, driven step by step on the test's own thread (which becomes
/// the engine thread at `begin`): two `MemoryFileSystem`s, a `ManualClock`, fake watchers.
final class MemoryRuntime {
    typealias Runtime = PairRuntime<MemoryFileSystem, FakeWatcher>
    let clock = ManualClock()
    let local: MemoryFileSystem
    let cloud: MemoryFileSystem
    let store = MemoryRecordStore()
    private(set) var runtime: Runtime
    /// The watcher of each side, as the runtime last made it.
    final class Watchers: Sendable {
        let bySide = Mutex<[Side: FakeWatcher]>([:])
        /// How many more times watching each side fails (as inotify_init does with EMFILE).
        let refusals: Mutex<[Side: Int]>
        init(refusals: [Side: Int]) { self.refusals = Mutex(refusals) }
    }
    private let watchers: Watchers

    /// `refusingWatches`: how many times watching each side fails before it works.
    init(refusingWatches: [Side: Int] = [:]) {
        watchers = Watchers(refusals: refusingWatches)
        local = MemoryFileSystem(time: clock.timeSource, device: 1)
        cloud = MemoryFileSystem(time: clock.timeSource, temporaryDirectory: RootMarkers.temporary(for: "laptop"), device: 2)
        runtime = Self.makeRuntime(local: local, cloud: cloud, store: store, records: [:], clock: clock, watchers: watchers)
    }

    private static func makeRuntime(local: MemoryFileSystem, cloud: MemoryFileSystem, store: MemoryRecordStore,
                                     records: [RelativePath: PathRecord], clock: ManualClock,
                                     watchers: Watchers) -> Runtime {
        var settings = EngineSettings(deviceName: "laptop")
        settings.copyThreads = 1  // As `Pair`: memory filesystems replay in order.
        let engine = SyncEngine(local: local, cloud: cloud, store: store, records: records, clock: clock, settings: settings,
                                log: .silent, rootNames: ("L", "C"))
        let options = RuntimeOptions(localRoot: "L", cloudRoot: "C", stateDirectory: "S", engine: settings)
        return PairRuntime(engine: engine, store: store, options: options, clock: clock, log: .silent) { side, root, _ in
            let refused = watchers.refusals.withLock { refusals in
                defer { refusals[side] = max(0, (refusals[side] ?? 0) - 1) }
                return (refusals[side] ?? 0) > 0
            }
            if refused { throw Errno.tooManyOpenFiles.at("watch", root) }
            let watcher = FakeWatcher()
            watchers.bySide.withLock { $0[side] = watcher }
            return watcher
        }
    }

    /// A runtime started again on the same folders, from what the journal committed.
    func restart() {
        runtime = Self.makeRuntime(local: local, cloud: cloud, store: store, records: store.committed, clock: clock, watchers: watchers)
    }

    func watcher(_ side: Side) -> FakeWatcher? { watchers.bySide.withLock { $0[side] } }

    /// The next `times` tries to watch `side` fail, and the watcher made before is forgotten.
    func refuseWatching(_ side: Side, times: Int) {
        watchers.refusals.withLock { $0[side] = times }
        watchers.bySide.withLock { $0[side] = nil }
    }

    /// Steps the runtime, moving the clock past the quiet period each time, until `condition`
    /// holds (the watcher threads post their events on their own time).
    func stepUntil(_ what: String, timeout: Duration = .seconds(20), _ condition: () -> Bool) throws {
        try Polling.wait(what, timeout: timeout) {
            clock.advance(by: runtime.options.quietPeriod + .nanoseconds(1))
            _ = runtime.step()
            return condition()
        }
    }

    func content(_ fs: MemoryFileSystem, _ path: String) -> String? {
        guard case .file(let bytes)? = fs.snapshot()[rp(path)]?.content else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
