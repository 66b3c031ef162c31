import NimbusProtocol

/// Which version of a conflicted file to keep (`resolve`).
public enum ConflictKeep: String, Sendable, CaseIterable {
    /// This device's version (the conflict copy) takes the name.
    case local
    /// The cloud's version stays; this device's goes to the versions store.
    case cloud
    /// Both stay, the conflict copy as a file of its own.
    case both
}

/// The kind of lease `acquire` asks for.
public enum LeaseMode: String, Sendable, CaseIterable {
    /// Readers: any number at once; downloads a placeholder first.
    case shared
    /// One writer; nothing else on the path, above it or below it.
    case exclusive
}

/// The typed methods of the protocol (PROTOCOL.md). Each is one request and one answer.
extension NimbusConnection {
    public func status() async throws -> StatusResult {
        try await call(.status, NoParams())
    }

    /// Every entry of `path` (a folder, or one file), or everything below it when
    /// `recursive`; only those in `state` (a state name such as "conflict") when given.
    /// Reads all pages of the answer.
    public func list(_ path: String = "", recursive: Bool = false, state: String? = nil) async throws -> [Entry] {
        try await listAll(path, recursive: recursive, state: state, raw: false).entries
    }

    /// All pages of a listing: typed, or raw (for `--json`, which prints them as one list).
    /// Only one form is decoded: a listing may hold a whole tree.
    func listAll(_ path: String, recursive: Bool, state: String?, raw: Bool) async throws -> (entries: [Entry], raw: [JSONValue]) {
        var params = ListParams(path: WirePath(path), recursive: recursive, state: state)
        var entries: [Entry] = []
        var rawEntries: [JSONValue] = []
        while true {
            let cursor: String?
            if raw {
                let json = try await callRaw(ControlMethod.list.rawValue, params)
                if case .array(let items)? = json["entries"] { rawEntries += items }
                cursor = json["nextCursor"]?.stringValue
            } else {
                let page = try await call(.list, params, as: ListResult.self)
                entries += page.entries
                cursor = page.nextCursor
            }
            guard let cursor else { return (entries, rawEntries) }
            params = ListParams(cursor: cursor)
        }
    }

    public func stat(_ path: String) async throws -> Entry {
        try await call(.stat, PathParams(WirePath(path)))
    }

    public func conflicts() async throws -> [ConflictInfo] {
        try await call(.conflicts, NoParams(), as: ConflictsResult.self).conflicts
    }

    @discardableResult
    public func resolve(_ path: String, keep: ConflictKeep) async throws -> ResolveResult {
        try await call(.resolve, ResolveParams(path: WirePath(path), keep: keep.rawValue))
    }

    /// Kept previous versions of `path`, newest first.
    public func versions(of path: String) async throws -> [VersionInfo] {
        try await call(.versions, VersionsParams(path: WirePath(path)), as: VersionsResult.self).versions
    }

    /// Brings back `version` (default the newest) at `to` (default `path` itself).
    @discardableResult
    public func restore(_ path: String, version: String? = nil, to target: String? = nil) async throws -> RestoreResult {
        try await call(.restore, RestoreParams(path: WirePath(path), version: version, to: target.map { WirePath($0) }))
    }

    @discardableResult
    public func pause() async throws -> PauseResult { try await call(.pause, NoParams()) }

    @discardableResult
    public func resume() async throws -> PauseResult { try await call(.resume, NoParams()) }

    /// Compares both folders in full; answers with the entries in sync afterwards.
    @discardableResult
    public func rescan() async throws -> RescanResult { try await call(.rescan, NoParams()) }

    /// Carries out the deletions held by the mass-delete guard.
    @discardableResult
    public func confirmDeletes() async throws -> DeletesResult { try await call(.confirmDeletes, NoParams()) }

    /// Undoes the held deletions: the files come back from the other side.
    @discardableResult
    public func revertDeletes() async throws -> DeletesResult { try await call(.revertDeletes, NoParams()) }

    // MARK: Files on demand (DESIGN §5)

    /// Downloads `path` and answers once it is there (progress arrives as notifications on
    /// this connection); with `wait: false` the daemon answers as soon as it has started.
    @discardableResult
    public func download(_ path: String, wait: Bool = true) async throws -> JSONValue {
        try await callRaw(ControlMethod.download.rawValue, PathAction(path, wait: wait ? nil : false))
    }

    @discardableResult
    public func evict(_ path: String) async throws -> JSONValue {
        try await callRaw(ControlMethod.evict.rawValue, PathParams(WirePath(path)))
    }

    @discardableResult
    public func pin(_ path: String) async throws -> JSONValue {
        try await callRaw(ControlMethod.pin.rawValue, PathParams(WirePath(path)))
    }

    @discardableResult
    public func unpin(_ path: String) async throws -> JSONValue {
        try await callRaw(ControlMethod.unpin.rawValue, PathParams(WirePath(path)))
    }

    // MARK: Leases (issue #8)

    /// A lease on `path`, held until `release` or until this connection closes. With a
    /// `timeout` (seconds; 0 = only if free now) a busy path fails with `busy`.
    public func acquire(_ path: String, mode: LeaseMode, timeout: Double? = nil) async throws -> AcquireResult {
        try await call(.acquire, AcquireParams(path: WirePath(path), mode: mode.rawValue, timeoutSeconds: timeout))
    }

    @discardableResult
    public func release(_ lease: UInt64) async throws -> ReleaseResult {
        try await call(.release, ReleaseParams(lease: lease))
    }

    public func locks() async throws -> [LeaseInfo] {
        try await call(.locks, NoParams(), as: LocksResult.self).locks
    }

    /// Asks the daemon to read its config file again.
    public func reload() async throws -> ReloadResult { try await call(.reload, NoParams()) }

    // MARK: Watching

    /// Subscribes to the daemon's notifications: state changes, conflicts, errors, phase
    /// changes and (with `progress`) upload and download progress. The stream ends when the
    /// connection does. Subscribing happens before the request, so nothing in between is lost.
    public func watch(progress: Bool = true) async throws -> AsyncStream<DaemonNotification> {
        let stream = transport.subscribe()
        _ = try await call(.watch, WatchParams(progress: progress), as: WatchResult.self)
        return stream
    }

    /// Notifications without asking for `watch`: the progress of this connection's own
    /// downloads and acquires.
    public func notifications() -> AsyncStream<DaemonNotification> {
        transport.subscribe()
    }
}

/// `PathParams` plus `wait`, for `download`.
struct PathAction: Encodable, Sendable {
    var path: String
    var pathBytes: String?
    var wait: Bool?

    init(_ path: String, wait: Bool?) {
        let wire = WirePath(path)
        self.path = wire.text
        self.pathBytes = wire.base64
        self.wait = wait
    }
}
