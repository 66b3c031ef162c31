import Dispatch
import Foundation
import NimbusSystem
import NimbusVocabulary

/// Sees files arrive complete below a root with inotify (no busy loop): a `TreeWatcher` on
/// the root (Nimbus's `.nimbus` folder excluded), and a size check on each event that names
/// a file of interest.
final class ArrivalWatch {
    let root: String
    private let system: DiskFileSystem
    private let watcher: TreeWatcher
    /// The daemon that should bring the files: when it dies, waiting is pointless.
    private let daemon: Daemon

    init(root: String, daemon: Daemon) throws {
        self.root = root
        self.daemon = daemon
        system = DiskFileSystem(root: SystemPath(root))
        watcher = try TreeWatcher(root: SystemPath(root),
                                  options: TreeWatcher.Options(exclude: { $0.bytes == Array(".nimbus".utf8) }))
    }

    func close() { watcher.close() }

    /// Waits until `path` is a file of `size` bytes; returns the monotonic time it was seen
    /// so, or nil after `timeout` seconds. Throws when the daemon exits meanwhile.
    func waitFor(_ path: RelativePath, size: Int64, timeout: Double) throws -> Int64? {
        let deadline = Monotonic.deadline(after: timeout)
        if isComplete(path, size) { return Monotonic.now }
        while true {
            let events = try nextEvents(until: deadline, poll: nil)
            guard let events else { return nil }
            let seen = Monotonic.now
            if events.contains(where: { $0.path == path || $0.kind == .overflow }) && isComplete(path, size) { return seen }
        }
    }

    /// Waits until every file of `expected` (all below the folder `under`) has been reported
    /// and is complete; returns when the last was seen, or nil after `timeout` seconds. After an
    /// inotify overflow it falls back to scanning the folder every 100 ms.
    func waitForAll(_ expected: Set<RelativePath>, under folder: String, timeout: Double) throws -> Int64? {
        let deadline = Monotonic.deadline(after: timeout)
        var seen = Set<RelativePath>()
        var polling = false
        while true {
            guard let events = try nextEvents(until: deadline, poll: polling ? .milliseconds(100) : nil) else { return nil }
            let now = Monotonic.now
            for event in events {
                if event.kind == .overflow { polling = true }
                if !event.isDirectory && expected.contains(event.path) { seen.insert(event.path) }
            }
            if seen.count == expected.count || polling {
                if try TreeMaker.missing(expected.map(\.description), in: root, under: folder) == nil { return now }
                polling = true  // Reported but not complete: check by scanning from now on.
            }
        }
    }

    /// The next batch of events (empty after `poll` when given); nil once `deadline` has
    /// passed. Looks at the daemon every second and throws when it has exited.
    private func nextEvents(until deadline: MonotonicInstant, poll: Duration?) throws -> [WatchEvent]? {
        while true {
            let remaining = Monotonic.remaining(until: deadline)
            if remaining <= .zero { return nil }
            let wait = min(remaining, poll ?? .seconds(1), .seconds(1))
            let events = try watcher.next(timeout: wait)
            if !events.isEmpty || poll != nil { return events }
            if !daemon.isRunning {
                throw BenchError("nimbusd ended (\(daemon.exitDescription)) while the bench waited for its copies; log: \(daemon.logSummary())")
            }
        }
    }

    private func isComplete(_ path: RelativePath, _ size: Int64) -> Bool {
        guard let metadata = try? system.metadata(of: path) else { return false }
        return metadata.kind == .file && metadata.size == size
    }
}
