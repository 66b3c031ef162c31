import FoundationEssentials
import NimbusCore
import NimbusProtocol
import NimbusVocabulary

/// Everything that can go wrong when talking to the daemon. Like the daemon's own errors,
/// each says what failed (`message`), why (`reason`) and what to do (`suggestion`); the
/// `LocalizedError` properties carry the same three for apps that show them. Not a
/// `SystemError`: a failed connect is one of its causes (its errno in `cause`), but what the
/// user needs is the daemon's state and what to do, which an errno cannot say.
public enum NimbusClientError: Error, Sendable, Equatable {
    /// Nothing listens on the socket (it does not exist, or nobody accepts on it).
    case notRunning(socketPath: String, endpoint: NimbusEndpoint, cause: String)
    /// The socket exists but cannot be used (permissions, a file that is not a socket, …).
    case unreachable(socketPath: String, cause: String)
    /// The daemon closed the connection (before answering, or while watching).
    case connectionClosed(socketPath: String)
    /// The daemon did not accept the connection, answer `hello` or take a request (read it
    /// off the socket) within `limit`: it is stuck or overloaded. `operation` says which, in
    /// words such as "connecting" or "sending the status request".
    case timedOut(socketPath: String, operation: String, limit: Duration)
    /// The daemon answered something this client cannot read.
    case badResponse(String)
    /// The daemon answered with an error; `RPCError.data` has its name, reason and suggestion.
    case server(RPCError)
    /// Something the caller gave cannot be used (an instance name, a path, …).
    case invalidArgument(String, reason: String)

    public var message: String {
        switch self {
        case .notRunning: "the Nimbus daemon is not running"
        case .unreachable(let path, _): "cannot connect to the Nimbus daemon at \(path)"
        case .connectionClosed: "the Nimbus daemon closed the connection"
        case .timedOut: "the Nimbus daemon did not respond in time"
        case .badResponse: "the Nimbus daemon sent an answer that cannot be read"
        case .server(let error): error.message
        case .invalidArgument(let value, _): "cannot use \(value)"
        }
    }

    public var reason: String {
        switch self {
        case let .notRunning(path, _, cause): "nothing is listening on \(path) (\(cause))"
        case let .unreachable(_, cause): cause
        case .connectionClosed: "it stopped or restarted, or it refused this connection"
        case let .timedOut(path, operation, limit): "\(operation) on \(path) took longer than \(Self.describe(limit))"
        case .badResponse(let detail): detail
        case .server(let error): error.data?.reason ?? "the daemon gave no reason"
        case let .invalidArgument(_, reason): reason
        }
    }

    public var suggestion: String {
        switch self {
        case let .notRunning(path, endpoint, _): Self.startHint(endpoint, socketPath: path)
        case .unreachable: "check that the socket belongs to you and that the daemon runs as your user; 'nimbusctl --socket PATH' picks another socket"
        case .connectionClosed: "check the daemon's log ('journalctl --user -u nimbusd') and try again"
        case .timedOut: "check that the daemon is not stuck ('systemctl --user status nimbusd', 'journalctl --user -u nimbusd') and try again"
        case .badResponse: "check that nimbusctl and nimbusd are the same version ('nimbusctl --version', 'nimbusd --version')"
        case .server(let error): error.data?.suggestion ?? "see the daemon's log ('journalctl --user -u nimbusd')"
        case .invalidArgument: "correct it and try again"
        }
    }

    /// The machine-readable name: the daemon's error name, or one of the client's own
    /// (`not_running`, `unreachable`, `connection_closed`, `timed_out`, `bad_response`,
    /// `invalid_argument`).
    public var name: String {
        switch self {
        case .notRunning: "not_running"
        case .unreachable: "unreachable"
        case .connectionClosed: "connection_closed"
        case .timedOut: "timed_out"
        case .badResponse: "bad_response"
        case .server(let error): error.data?.name ?? "error_\(error.code)"
        case .invalidArgument: "invalid_argument"
        }
    }

    /// The JSON-RPC code of a daemon error; nil for the client's own errors.
    public var code: Int? {
        if case .server(let error) = self { return error.code }
        return nil
    }

    /// True when the daemon could not be reached at all (exit status 69 in nimbusctl).
    public var isUnreachable: Bool {
        switch self {
        case .notRunning, .unreachable, .connectionClosed, .timedOut: true
        case .server(let error): error.name == .permissionDenied
        default: false
        }
    }

    /// "2 s", "1.5 s", "250 ms": a limit as people read it.
    static func describe(_ limit: Duration) -> String {
        let milliseconds = limit.nanosecondCount / Duration.nanosecondsPerMillisecond
        if milliseconds < 1000 { return "\(milliseconds) ms" }
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(Double(milliseconds) / 1000) s"
    }

    /// How to start the daemon this client looked for: the systemd way and the plain way.
    static func startHint(_ endpoint: NimbusEndpoint, socketPath: String) -> String {
        switch endpoint {
        case .instance(let name) where name == Locations.defaultInstance:
            "start it with 'systemctl --user start nimbusd', or run 'nimbusd' in a terminal"
        case .instance(let name):
            "start it with 'systemctl --user start nimbusd@\(name)', or run 'nimbusd --instance \(name)' in a terminal"
        case .socket:
            "start it with 'systemctl --user start nimbusd' or run " + ShellWord.command(["nimbusd", "--socket", socketPath])
                + "; check that --socket names the daemon's socket"
        }
    }
}

extension NimbusClientError: LocalizedError, CustomStringConvertible {
    public var errorDescription: String? { message }
    public var failureReason: String? { reason }
    public var recoverySuggestion: String? { suggestion }
    public var description: String { "\(message): \(reason); \(suggestion)" }
}
