/// Notifications the daemon sends to connections that called `watch` (no `id`, no answer).
public enum NotificationMethod: String, Sendable, CaseIterable, Codable {
    /// Something changed: see `EventParams.type`.
    case event
    /// An upload or download moved on.
    case progress
}

/// `type` says which fields are present:
/// - `state`: `path`, `state` (and `message` when it is `error`) — a path changed state;
/// - `conflict`: `path`, `conflictCopy` — both sides changed `path`;
/// - `error`: `path`, `message` — an operation on `path` failed;
/// - `phase`: `phase` (and `reason` when `halted`) — the engine's phase changed;
/// - `deleted`: `path`, `side` — the daemon deleted `path` in the `side` folder (`local` or
///   `cloud`), following a deletion in the other; a cloud file goes to the versions store;
/// - `renamed`: `from`, `path`, `side` — the daemon renamed `from` to `path` in the `side`
///   folder, following a rename in the other;
/// - `deletions-held`: `side`, `count`, `paths`, `path`, `keptDeletes` — the mass-delete guard
///   holds `count` deletions in the `side` folder until `confirmDeletes` or `revertDeletes`;
///   `paths` are the first few (texts for people), `path` the first (exact, with `pathBytes`
///   when needed); `keptDeletes` (absent when none) counts the deletions made there just
///   before, within the guard's window, which are kept and which `revertDeletes` undoes too
///   (`status.keptDeletes`);
/// - `fetches-refused`: `path`, `limit`, `program` (when known) — opens of not-downloaded files
///   came faster than `limit` a minute and are refused for now; `program` opened `path`;
/// - `overflow`: events were dropped because they came faster than the daemon could send
///   them; re-read what you need (`list`, `status`).
/// `time`/`timeNs` say when the daemon saw it. A client shows a `type` it does not know by its
/// name (new types may come in later versions).
public struct EventParams: Codable, Sendable, Equatable {
    public var type: String
    public var path: String?
    public var pathBytes: String?
    public var state: String?
    public var message: String?
    public var conflictCopy: String?
    public var conflictCopyBytes: String?
    public var phase: String?
    public var reason: String?
    /// `deleted` and `renamed`: the folder the daemon changed, `local` or `cloud`.
    public var side: String?
    /// `renamed`: the old path.
    public var from: String?
    public var fromBytes: String?
    /// `deletions-held`: how many deletions are held, and the first few of their paths.
    public var count: Int?
    public var paths: [String]?
    /// `deletions-held`: how many deletions applied just before are kept (nil: none).
    public var keptDeletes: Int?
    /// `fetches-refused`: the limit (opens a minute) and the program that opened `path`.
    public var limit: Int?
    public var program: String?
    public var time: String
    public var timeNs: Int64

    public init(type: String, timeNs: Int64) {
        self.type = type
        self.time = WireTime.rfc3339(nanoseconds: timeNs)
        self.timeNs = timeNs
    }

    public mutating func setPath(_ path: WirePath) {
        (self.path, self.pathBytes) = path.fields
    }

    public mutating func setFrom(_ path: WirePath) {
        (from, fromBytes) = path.fields
    }

    public mutating func setConflictCopy(_ path: WirePath) {
        (conflictCopy, conflictCopyBytes) = path.fields
    }
}

/// `direction`: upload (local → cloud) or download (cloud → local). `fraction`: 0…1.
public struct ProgressParams: Codable, Sendable, Equatable {
    public var path: String
    public var pathBytes: String?
    public var direction: String
    public var fraction: Double
    public var time: String
    public var timeNs: Int64

    public init(path: WirePath, direction: String, fraction: Double, timeNs: Int64) {
        (self.path, self.pathBytes) = path.fields
        self.direction = direction
        self.fraction = fraction
        self.time = WireTime.rfc3339(nanoseconds: timeNs)
        self.timeNs = timeNs
    }
}
