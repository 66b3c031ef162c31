/// An error as it travels in a response: the JSON-RPC `code` and `message`, plus `data`
/// with a stable machine-readable `name`, the `reason` and a `suggestion` of what to do.
/// Every error the daemon sends carries all of them. A wire format, not a syscall failure: a
/// `SystemError` in the daemon is turned into one of these with its path and operation in words.
public struct RPCError: Error, Codable, Sendable, Equatable, CustomStringConvertible {
    public var code: Int
    public var message: String
    public var data: Detail?

    public struct Detail: Codable, Sendable, Equatable {
        /// An `ErrorName` raw value; clients should switch on this, not on the message.
        public var name: String
        public var reason: String
        public var suggestion: String

        public init(name: String, reason: String, suggestion: String) {
            self.name = name
            self.reason = reason
            self.suggestion = suggestion
        }
    }

    public init(code: Int, message: String, data: Detail?) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// An error of a named kind; the code follows from the name.
    public init(_ name: ErrorName, _ message: String, reason: String, suggestion: String) {
        self.init(code: name.code, message: message, data: Detail(name: name.rawValue, reason: reason, suggestion: suggestion))
    }

    /// The name, when it is one this version knows.
    public var name: ErrorName? { data.flatMap { ErrorName(rawValue: $0.name) } }

    public var description: String {
        guard let data else { return message }
        return "\(message): \(data.reason) (\(data.suggestion))"
    }
}

/// The error names of the protocol. Standard JSON-RPC errors keep their standard codes;
/// application errors use codes from the range JSON-RPC reserves for servers.
public enum ErrorName: String, Sendable, CaseIterable, Codable {
    // Standard JSON-RPC 2.0.
    case parseError = "parse_error"
    case invalidRequest = "invalid_request"
    case methodNotFound = "method_not_found"
    case invalidParams = "invalid_params"
    case internalError = "internal_error"
    /// A path that is absolute, has `..`, NUL or empty components, or passes through a
    /// symlink inside the local folder. Sent with the invalid-params code.
    case invalidPath = "invalid_path"
    // Application errors.
    case notFound = "not_found"
    case busy
    case notInSync = "not_in_sync"
    case paused
    case notSupported = "not_supported"
    case notInConflict = "not_in_conflict"
    case failed
    case daemonHalted = "daemon_halted"
    /// The connecting user is neither the daemon's user nor root (sent once, then the
    /// connection is closed).
    case permissionDenied = "permission_denied"
    /// `evict` of a pinned file.
    case pinned
    /// `evict` of a file some process has open.
    case inUse = "in_use"
    /// A download that would leave too little free space.
    case noSpace = "no_space"
    /// A name Nimbus keeps for itself in the local folder (the root marker, a temporary,
    /// the holding folder of kept deletions): never synced, not a file of the user's.
    case nimbusOwn = "nimbus_own"
    /// The daemon is stopping (SIGTERM): a request under way, such as a download, was given
    /// up, and nothing is recorded for it.
    case daemonStopping = "daemon_stopping"

    public var code: Int {
        switch self {
        case .parseError: -32700
        case .invalidRequest: -32600
        case .methodNotFound: -32601
        case .invalidParams, .invalidPath: -32602
        case .internalError: -32603
        case .notFound: -32001
        case .busy: -32002
        case .notInSync: -32003
        case .paused: -32004
        case .notSupported: -32005
        case .notInConflict: -32006
        case .failed: -32007
        case .daemonHalted: -32008
        case .permissionDenied: -32009
        case .pinned: -32010
        case .inUse: -32011
        case .noSpace: -32012
        case .nimbusOwn: -32013
        case .daemonStopping: -32014
        }
    }
}
