import NimbusCore

// Paths in the protocol (PROTOCOL.md): `Entry` as list and stat return it, and the params of
// the methods that take a path. The other query methods are in Methods.swift.

// MARK: - Entries (list, stat)

/// One path with its state. `kind`: file, directory, symlink, special. `state`: a
/// `FileState` name (DESIGN §2). `residency`: auto, pinned, evicted.
public struct Entry: Codable, Sendable, Hashable {
    public var path: String
    public var pathBytes: String?
    public var kind: String
    /// Bytes; 0 for directories.
    public var size: Int64
    public var mtime: String
    public var mtimeNs: Int64
    public var state: String
    /// 0…1 while `uploading` or `downloading`; absent otherwise.
    public var progress: Double?
    /// Why, when `state` is `error`; absent otherwise.
    public var message: String?
    /// This device's copy, when `state` is `conflict`.
    public var conflictCopy: String?
    public var conflictCopyBytes: String?
    public var residency: String

    public init(path: WirePath, kind: String, size: Int64, mtimeNs: Int64, state: FileState,
                conflictCopy: WirePath?, residency: String) {
        (self.path, self.pathBytes) = path.fields
        self.kind = kind
        self.size = size
        self.mtime = WireTime.rfc3339(nanoseconds: mtimeNs)
        self.mtimeNs = mtimeNs
        self.state = state.name
        self.progress = state.progress
        self.message = state.message
        (self.conflictCopy, self.conflictCopyBytes) = conflictCopy?.fields ?? (nil, nil)
        self.residency = residency
    }

    public var wirePath: WirePath { (try? WirePath(text: path, base64: pathBytes)) ?? WirePath(path) }

    /// The state as the engine's type, when the name is one this version knows.
    public var fileState: FileState? { FileState(wireName: state, progress: progress, message: message) }
}

extension FileState {
    /// The inverse of `name` plus the wire's `progress` and `message` fields.
    public init?(wireName: String, progress: Double? = nil, message: String? = nil) {
        switch wireName {
        case "local": self = .local
        case "uploading": self = .uploading(progress: progress ?? 0)
        case "notDownloaded": self = .notDownloaded
        case "downloading": self = .downloading(progress: progress ?? 0)
        case "downloaded": self = .downloaded
        case "outdated": self = .outdated
        case "conflict": self = .conflict
        case "error": self = .error(message ?? "")
        default: return nil
        }
    }
}

/// Parameters of the methods that take one path: stat, download, evict, pin, unpin, versions.
public struct PathParams: Codable, Sendable, Equatable {
    public var path: String?
    public var pathBytes: String?
    public init(_ path: WirePath) {
        (self.path, self.pathBytes) = path.fields
    }
}

/// Parameters of `download`: `PathParams` plus `wait` (default true: answer once the file
/// is there; false: answer at once, the download goes on).
public struct DownloadParams: Codable, Sendable, Equatable {
    public var path: String?
    public var pathBytes: String?
    public var wait: Bool?
    public init(_ path: WirePath, wait: Bool? = nil) {
        (self.path, self.pathBytes) = path.fields
        self.wait = wait
    }
}

public struct ListParams: Codable, Sendable, Equatable {
    /// The folder to list (or a single file); default the root.
    public var path: String?
    public var pathBytes: String?
    /// Everything below `path`, not only its direct entries. Default false.
    public var recursive: Bool?
    /// Only entries in this state (a `FileState` name).
    public var state: String?
    /// At most this many entries per answer (1…10000; the daemon may send fewer so that a
    /// line stays under 1 MiB).
    public var limit: Int?
    /// `nextCursor` of the previous answer: the next page of the same listing. The other
    /// parameters are then ignored.
    public var cursor: String?
    public init(path: WirePath = WirePath(bytes: []), recursive: Bool = false, state: String? = nil,
                limit: Int? = nil, cursor: String? = nil) {
        (self.path, self.pathBytes) = path.fields
        self.recursive = recursive
        self.state = state
        self.limit = limit
        self.cursor = cursor
    }
}

public struct ListResult: Codable, Sendable, Equatable {
    /// Sorted by path, parents before their children.
    public var entries: [Entry]
    /// Present when more entries follow: ask `list {"cursor": …}` for them. A cursor is
    /// valid on the same connection until the listing is read to its end or a new listing
    /// starts.
    public var nextCursor: String?
    public init(entries: [Entry], nextCursor: String?) {
        self.entries = entries
        self.nextCursor = nextCursor
    }
}
