import FoundationEssentials
import NimbusSystem
import NimbusProtocol
import NimbusVocabulary

/// A path's state changed (an `event` notification of type `state`).
public struct StateChange: Sendable, Equatable {
    /// Relative to the local root.
    public var path: String
    /// The new state name (DESIGN §2): local, uploading, notDownloaded, downloading,
    /// downloaded, outdated, conflict, error; `deleted` once it is gone.
    public var state: String
    /// Why, when `state` is `error`.
    public var message: String?
    /// This device's copy, when `state` is `conflict`.
    public var conflictCopy: String?
    /// When it happened, nanoseconds since 1970.
    public var timeNs: Int64
}

/// Coordinated access for applications (issue #8), the Linux counterpart of
/// NSFileCoordinator: read while nobody writes, write a new version that the cloud only ever
/// sees whole.
///
/// ```swift
/// let nimbus = try await NimbusConnection.connect()
/// try await nimbus.coordinatedWrite("notes.db") { temporary in
///     try database.export(to: temporary)
/// }
/// let text = try await nimbus.coordinatedRead("notes.txt") { try String(contentsOf: $0, encoding: .utf8) }
/// ```
///
/// A coordinated read of a placeholder downloads it first (the daemon does, before it grants
/// the shared lease), so `body` always reads the real content.
extension NimbusConnection {
    /// The daemon's local folder, from `hello`.
    public var localRoot: String { daemon.localRoot }

    /// The file `path` (relative to the local root, "" for the root) on this machine.
    public func localURL(for path: String) -> URL {
        let root = URL(fileURLWithPath: localRoot, isDirectory: true)
        return path.isEmpty ? root : root.appendingPathComponent(path)
    }

    // MARK: Status

    /// The sync state of one file or folder.
    public func status(of path: String) async throws -> Entry {
        try await stat(path)
    }

    /// The sync state of several paths at once, asked concurrently on this connection. Paths
    /// the daemon does not know (`not_found`) are left out; any other error is thrown.
    public func status(of paths: [String]) async throws -> [String: Entry] {
        try await withThrowingTaskGroup(of: (String, Entry?).self) { group in
            for path in Set(paths) {
                group.addTask {
                    do {
                        return (path, try await self.stat(path))
                    } catch let error as NimbusClientError where error.name == ErrorName.notFound.rawValue {
                        return (path, nil)
                    }
                }
            }
            var entries: [String: Entry] = [:]
            for try await (path, entry) in group { entries[path] = entry }
            return entries
        }
    }

    // MARK: Files on demand

    /// Downloads the placeholder `path` (or every placeholder below the folder `path`) and
    /// returns its entry once the content is there. `progress` gets the fraction done (0…1)
    /// of each file as it is copied. Requests for a file already being downloaded share that
    /// download. Fails with `no_space` when the local disk would be left too full.
    public func download(_ path: String, progress: @escaping @Sendable (_ path: String, _ fraction: Double) -> Void) async throws -> Entry {
        let notifications = try await watch(progress: true)
        let pump = Task {
            for await notification in notifications {
                guard case .progress(let update) = notification.payload, update.direction == "download",
                      path.isEmpty || update.path == path || update.path.hasPrefix(path + "/") else { continue }
                progress(update.path, update.fraction)
            }
        }
        defer { pump.cancel() }
        return try await call(.download, DownloadParams(WirePath(path)), as: Entry.self)
    }

    // MARK: Coordinated reading and writing

    /// Holds a shared lease on `path` while `body` reads the file (given its local URL), and
    /// returns what `body` returns. Other readers may read at once; writers (and the daemon)
    /// wait until `body` is done. With `timeout` a busy path fails with `busy`.
    public func coordinatedRead<T: Sendable>(_ path: String, timeout: Double? = nil,
                                             body: @Sendable (URL) async throws -> T) async throws -> T {
        let lease = try await acquire(path, mode: .shared, timeout: timeout)
        let result: T
        do {
            // The lease names the file itself, also when `path` named its placeholder.
            result = try await body(localURL(for: lease.path))
        } catch {
            _ = try? await release(lease.lease)
            throw error
        }
        try await release(lease.lease)
        return result
    }

    /// Replaces the file `path` with a new version, whole. Under an exclusive lease, `body`
    /// writes the new content into a temporary file beside the target (named `.nimbus-tmp-…`,
    /// which the daemon never syncs); the library then flushes it to disk, renames it over
    /// the target in one step (keeping the old file's permissions) and releases the lease, so
    /// the cloud only ever receives the complete new version, right after. Write to the given
    /// URL itself (not through another temporary file). When `body` throws, the temporary file
    /// goes and the target stays as it was.
    public func coordinatedWrite(_ path: String, timeout: Double? = nil,
                                 body: @Sendable (URL) async throws -> Void) async throws {
        guard !path.isEmpty else {
            throw NimbusClientError.invalidArgument("the path \"\"", reason: "it names the synced folder itself, not a file")
        }
        let target = localURL(for: path)
        let temporary = target.deletingLastPathComponent().appendingPathComponent(Self.temporaryName(for: target.lastPathComponent))
        let lease = try await acquire(path, mode: .exclusive, timeout: timeout)
        do {
            try AtomicReplacement.createEmpty(at: temporary.path, modeLike: target.path)
            try await body(temporary)
            try AtomicReplacement.install(temporary.path, over: target.path)
        } catch {
            AtomicReplacement.discard(temporary.path)
            _ = try? await release(lease.lease)
            throw error
        }
        try await release(lease.lease)
    }

    /// `.nimbus-tmp-write-UUID-` and the start of the target's name (which helps whoever finds
    /// one after a crash), at most 64 bytes of it, cut between characters: 119 bytes at most,
    /// well within NAME_MAX whatever the target's name is.
    static func temporaryName(for name: String) -> String {
        ".nimbus-tmp-write-\(UUID().uuidString)-" + String(decoding: FileName.prefix(name.utf8, fitting: 64), as: UTF8.self)
    }

    // MARK: State changes

    /// Every state change from now on (below `path` when given), until the connection ends
    /// or the consumer stops listening. Subscribing happens before this returns.
    public func stateChanges(under path: String = "") async throws -> AsyncStream<StateChange> {
        let notifications = try await watch(progress: false)
        let (stream, continuation) = AsyncStream.makeStream(of: StateChange.self, bufferingPolicy: .bufferingNewest(10_000))
        let pump = Task {
            for await notification in notifications {
                guard case .event(let event) = notification.payload, event.type == "state",
                      let changed = event.path, let state = event.state,
                      path.isEmpty || changed == path || changed.hasPrefix(path + "/") else { continue }
                continuation.yield(StateChange(path: changed, state: state, message: event.message,
                                               conflictCopy: event.conflictCopy, timeNs: event.timeNs))
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in pump.cancel() }
        return stream
    }
}
