import Dispatch
import Glibc
import NimbusVocabulary
import Synchronization
import Testing
@testable import NimbusSystem
import NimbusTestSupport

// What the TreeWatcher tests share: reading events until they arrive, and scratch directories.

extension TreeWatcher {
    /// Reads batches until `satisfied` holds for all events read so far; after 5 s records an
    /// issue that lists what did arrive.
    @discardableResult
    func collect(sourceLocation: SourceLocation = #_sourceLocation,
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
    func collect(sentinel scratch: WatchScratch, in directory: String = "",
                             sourceLocation: SourceLocation = #_sourceLocation) throws -> [WatchEvent] {
        let name = "sentinel-\(UInt64.random(in: 0...UInt64.max))"
        try scratch.write(directory.isEmpty ? name : "\(directory)/\(name)")
        return try collect(sourceLocation: sourceLocation) { $0.has(.created, name) }
    }
}

/// A `next(timeout: nil)` running on another thread.
final class BlockedNext: Sendable {
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

func treePath(_ text: String) -> RelativePath {
    try! RelativePath(validating: text)
}

extension [WatchEvent] {
    func has(_ kind: WatchEvent.Kind, _ text: String, directory: Bool? = nil) -> Bool {
        contains { $0.kind == kind && $0.path == treePath(text) && (directory == nil || $0.isDirectory == directory) }
    }

    /// The cookie of the first rename half at `text`.
    func cookie(of text: String) -> UInt32? {
        for event in self where event.path == treePath(text) {
            switch event.kind {
            case .movedFrom(let cookie), .movedTo(let cookie): return cookie
            default: continue
            }
        }
        return nil
    }

    var unwatched: [RelativePath] { flatMap { $0.limitReached?.directories ?? [] } }
}

extension WatchEvent {
    var limitReached: WatchLimitReached? {
        if case .watchLimitReached(let limit) = kind { limit } else { nil }
    }
}

/// A unique directory under /tmp. `remove()` deletes it with everything inside.
struct WatchScratch {
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
