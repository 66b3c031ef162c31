import FoundationEssentials
import NimbusProtocol
import NimbusSystem
import NimbusVocabulary

/// A conversation with a running `nimbusd` over its control socket (DESIGN §7). Calls may
/// be made from any number of tasks at once; each waits for its own answer.
///
/// ```swift
/// let nimbus = try await NimbusConnection.connect()
/// let status = try await nimbus.status()
/// for entry in try await nimbus.list("Documents") { print(entry.state, entry.path) }
/// ```
///
/// Paths are relative to the daemon's local folder (`daemon.localRoot`), "" for the root.
/// Every error thrown is a `NimbusClientError` (or `CancellationError`).
public final class NimbusConnection: Sendable {
    /// What the daemon said about itself when the connection was opened (`hello`).
    public let daemon: HelloResult
    /// The socket this connection reached.
    public let socketPath: String
    /// How long a call waits for its answer before it fails with `.timedOut` (see
    /// `answerLimit`): a daemon that reads a request but never answers must not keep its
    /// caller waiting for ever.
    public let answerTimeout: Duration
    let transport: Transport

    private init(daemon: HelloResult, transport: Transport, answerTimeout: Duration) {
        self.daemon = daemon
        self.socketPath = transport.socketPath
        self.transport = transport
        self.answerTimeout = answerTimeout
    }

    deinit { transport.close() }

    /// How long a daemon may take to accept the connection, to answer `hello`, and to take
    /// each request off the socket, unless `connect` is told otherwise.
    public static let defaultTimeout: Duration = .seconds(30)

    /// How long a call waits for its answer, unless `connect` is told otherwise. Generous:
    /// calls that act (`rescan`, `resolve`, `pause`) are answered once the engine is between
    /// two passes, and a pass over a big tree takes minutes.
    public static let defaultAnswerTimeout: Duration = .seconds(600)

    /// Connects and says `hello`. For an instance, the user's own daemon is tried first,
    /// then the system service's. Throws `.notRunning` (with how to start it) when nothing
    /// listens, and `.timedOut` when the daemon does not accept the connection or answer
    /// `hello` within `timeout` (each), or later does not take a request off the socket
    /// within it: it is stuck. A call not answered within `answerTimeout` (`answerLimit`
    /// says which calls wait longer) fails alone with `.timedOut`. No call waits in a system call on the caller's thread (the
    /// connect runs on a thread of its own, requests are written by the connection's thread),
    /// so a stuck daemon never holds a thread of Swift's cooperative pool.
    public static func connect(to endpoint: NimbusEndpoint = .default,
                               clientName: String = "NimbusClient \(NimbusVersion.string)",
                               environment: [String: String] = ProcessInfo.processInfo.environment,
                               timeout: Duration = defaultTimeout,
                               answerTimeout: Duration = defaultAnswerTimeout) async throws -> NimbusConnection {
        let transport = try await ProcessSupport.onThreadOfItsOwn(name: "nimbus-connect") {
            try open(endpoint, environment: environment, timeout: timeout)
        }
        transport.start()
        do {
            let line = try await transport.request(ControlMethod.hello.rawValue,
                                                   HelloParams(versions: ProtocolVersion.supported, client: clientName),
                                                   answerWithin: timeout)
            let hello = try decode(HelloResult.self, line)
            guard ProtocolVersion.supported.contains(hello.version) else {
                throw NimbusClientError.badResponse("the daemon chose protocol version \(hello.version), which this client does not speak")
            }
            return NimbusConnection(daemon: hello, transport: transport, answerTimeout: answerTimeout)
        } catch {
            transport.close()
            throw error
        }
    }

    /// Connects to the first candidate socket that answers; blocks for up to `timeout` (a
    /// full backlog), so it runs on a thread of its own.
    private static func open(_ endpoint: NimbusEndpoint, environment: [String: String], timeout: Duration) throws -> Transport {
        let paths = try endpoint.candidateSocketPaths(environment: environment)
        if case .instance = endpoint, let first = paths.first { try checkPrivateDirectory(of: first, environment: environment) }
        var firstFailure: NimbusClientError?
        for path in paths {
            do {
                let socket = try UnixStreamSocket.connect(to: path, timeout: timeout)
                do {
                    return try Transport(socket: socket, socketPath: path, timeout: timeout)
                } catch {
                    socket.close()
                    throw error
                }
            } catch let error as SystemError where error.errno == .noSuchFile || error.errno == .connectionRefused
                                                   || firstFailure != nil {
                // Nothing there: try the next place, but report the first (the user's own).
                // The system service's socket is only a fallback: that it cannot be used
                // (it belongs to another user) says nothing about the user's own daemon.
                firstFailure = firstFailure ?? .notRunning(socketPath: path, endpoint: endpoint, cause: error.errno.description)
            } catch let error as SystemError where error.errno == .wouldBlock {
                // The listener's backlog stayed full: a daemon that does not accept.
                throw NimbusClientError.timedOut(socketPath: path, operation: "connecting", limit: timeout)
            } catch let error as SystemError where error.errno == .nameTooLong {
                throw NimbusClientError.invalidArgument("the socket path \(path)",
                                                        reason: "it is longer than the 107 bytes a Unix socket address holds")
            } catch {
                // The path is in the message already: the cause is the errno's own words.
                throw NimbusClientError.unreachable(socketPath: path, cause: Errno(of: error).map { "\($0)" } ?? "\(error)")
            }
        }
        throw firstFailure ?? NimbusClientError.notRunning(socketPath: paths.first ?? "", endpoint: endpoint, cause: "no socket")
    }

    /// Without `XDG_RUNTIME_DIR` the socket lives in `/tmp/nimbus-<uid>`, where another user
    /// could have made the directory first and put a socket of theirs in it. Refuse to talk
    /// through a directory that is not ours alone (Locations.socketDirectory asks for this).
    private static func checkPrivateDirectory(of socketPath: String, environment: [String: String]) throws {
        let uid = ProcessSupport.userID
        let directory = Locations.socketDirectory(environment: environment, uid: uid)
        guard directory.hasPrefix("/tmp/"), socketPath.hasPrefix(directory + "/"),
              let found = ProcessSupport.ownerAndMode(directory) else { return }
        guard !found.isDirectory || found.owner != uid || found.mode & 0o077 != 0 else { return }
        throw NimbusClientError.unreachable(
            socketPath: socketPath,
            cause: "\(directory) is not a private folder of yours (it must be a directory owned by uid \(uid) with mode 0700), so a socket in it may belong to someone else")
    }

    /// Ends the connection. Leases held by it are released by the daemon. Calls still
    /// waiting fail with `.connectionClosed`.
    public func close() { transport.close() }

    // MARK: Generic calls

    /// Any method, with typed parameters and result.
    public func call<Params: Encodable & Sendable, Result: Decodable & Sendable>(
        _ method: ControlMethod, _ params: Params, as type: Result.Type = Result.self) async throws -> Result {
        try Self.decode(type, try await transport.request(method.rawValue, params, answerWithin: answerLimit(method.rawValue, params)))
    }

    /// Any method by name, with the result exactly as the daemon sent it, for tools that
    /// pass results on (`nimbusctl --json`) and for methods newer than this library.
    public func callRaw(_ method: String, _ params: some Encodable & Sendable) async throws -> JSONValue {
        try Self.rawResult(try await transport.request(method, params, answerWithin: answerLimit(method, params)))
    }

    /// Both forms of one answer: typed for reading, raw for passing on.
    func callBoth<Result: Decodable & Sendable>(_ method: ControlMethod, _ params: some Encodable & Sendable,
                                                 as type: Result.Type) async throws -> (Result, JSONValue) {
        let line = try await transport.request(method.rawValue, params, answerWithin: answerLimit(method.rawValue, params))
        return (try Self.decode(type, line), try Self.rawResult(line))
    }

    /// How long a call may wait for its answer: `answerTimeout`, after the call's own wait
    /// for an `acquire` that waits at most `timeoutSeconds`. No limit for the calls answered
    /// when their work is done, however long that takes: an `acquire` without a limit (it
    /// waits for the path as long as the connection is open: `nimbusctl lock` without
    /// `--wait`) and a `download` that waits for the file (gigabytes over a slow share).
    func answerLimit(_ method: String, _ params: some Encodable & Sendable) -> Duration? {
        switch params {
        case let acquire as AcquireParams:
            // The daemon refuses more than a year, and a negative or NaN limit.
            guard let seconds = acquire.timeoutSeconds, seconds.isFinite else { return nil }
            return answerTimeout + .seconds(min(max(seconds, 0), 366 * 86_400))
        case let download as PathAction where method == ControlMethod.download.rawValue:
            return download.wait == false ? answerTimeout : nil
        default:
            return answerTimeout
        }
    }

    /// The `result` of a response line exactly as sent.
    static func rawResult(_ line: [UInt8]) throws -> JSONValue {
        let response: JSONValue
        do {
            response = try JSONValue(parsing: line)
        } catch {
            throw NimbusClientError.badResponse("the response is not JSON: \(error)")
        }
        guard let result = response["result"] else { throw NimbusClientError.badResponse("the response has no result") }
        return result
    }

    static func decode<Result: Decodable & Sendable>(_ type: Result.Type, _ line: [UInt8]) throws -> Result {
        do {
            return try JSONRPC.makeDecoder().decode(ResultOf<Result>.self, from: Data(line)).result
        } catch {
            throw NimbusClientError.badResponse("the result is not a \(Result.self): \(error)")
        }
    }
}
