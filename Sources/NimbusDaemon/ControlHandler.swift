import Dispatch
import FoundationEssentials
import NimbusCore
import NimbusProtocol
import NimbusSystem
import NimbusVocabulary
import Synchronization

/// What the control server serves: the pair (in the three parts of `ControlContext`), who
/// the daemon is, the lease table, and how to reload the configuration.
public struct ControlSetup: Sendable {
    public var view: any PairView
    public var commands: any PairCommands
    public var residency: any PairResidency
    public var instance: String
    public var localRoot: String
    public var cloudRoot: String
    public var startedAt: WallInstant
    public var leases: any LeaseProvider
    /// Re-reads the configuration (the `reload` method); nil answers `not_supported`.
    public var reload: (@Sendable () throws -> ReloadResult)?
    /// The placeholder style in use and why (`status`).
    public var placeholderStyle: PlaceholderStyleReport?

    public init(pair: any ControlContext, instance: String, localRoot: String, cloudRoot: String, startedAt: WallInstant,
                leases: (any LeaseProvider)? = nil, reload: (@Sendable () throws -> ReloadResult)? = nil) {
        view = pair
        commands = pair
        residency = pair
        self.instance = instance
        self.localRoot = localRoot
        self.cloudRoot = cloudRoot
        self.startedAt = startedAt
        // Leases live in the engine's own lock table, so a leased path is left alone while held.
        self.leases = leases ?? PathLocksLeaseProvider(locks: pair.locks)
        self.reload = reload
    }
}

/// One request being handled.
struct ControlRequest {
    let id: RequestID?
    let method: ControlMethod
    let data: Data
    let client: ControlClientConnection
}

/// Reads requests and answers them (PROTOCOL.md). Runs on the server thread; what may take
/// time is handed to the engine thread, a worker queue or the lease table, which answer
/// through a `ControlReplier`.
final class ControlHandler {
    let setup: ControlSetup
    unowned let server: ControlServer
    let encoder = JSONRPC.makeEncoder()
    let decoder = JSONRPC.makeDecoder()
    let workers = ControlWorkers(count: 4)

    /// The parts of the pair served (`ControlContext`); engine-thread work goes through
    /// `commands.perform`.
    var view: any PairView { setup.view }
    var commands: any PairCommands { setup.commands }
    var residency: any PairResidency { setup.residency }

    init(setup: ControlSetup, server: ControlServer) {
        self.setup = setup
        self.server = server
    }

    func encodeLine(_ value: any Encodable) -> [UInt8]? {
        do {
            return try JSONRPC.line(value, encoder: encoder)
        } catch {
            server.log.error("control socket: cannot encode an answer: \(error)")
            return nil
        }
    }

    // MARK: - Reading a request

    func handle(_ line: [UInt8], from client: ControlClientConnection) {
        let data = Data(line)
        let head: MessageHead
        do {
            head = try decoder.decode(MessageHead.self, from: data)
        } catch {
            return rejectUnreadable(data, error, client)
        }
        guard head.jsonrpc == JSONRPC.version else {
            return reply(head.id, client, RPCError(.invalidRequest, "not a JSON-RPC 2.0 request",
                                                   reason: "\"jsonrpc\" must be \"2.0\"", suggestion: Self.requestExample))
        }
        guard let name = head.method else {
            return reply(head.id, client, RPCError(.invalidRequest, "the request has no method",
                                                   reason: "a request needs \"method\" (a string)", suggestion: Self.requestExample))
        }
        guard let method = ControlMethod(rawValue: name) else {
            let known = ControlMethod.allCases.map(\.rawValue).joined(separator: ", ")
            return reply(head.id, client, RPCError(.methodNotFound, "no method named \"\(name)\"",
                                                   reason: "this daemon (protocol \(ProtocolVersion.current)) does not know \(name)",
                                                   suggestion: "known methods: \(known)"))
        }
        let request = ControlRequest(id: head.id, method: method, data: data, client: client)
        do {
            try checkParameterNames(request)
            try dispatch(request)
        } catch let error as RPCError {
            reply(request.id, client, error)
        } catch {
            server.log.error("control socket: \(method.rawValue) failed unexpectedly: \(error)")
            reply(request.id, client, RPCError(.internalError, "internal error in \(method.rawValue)", reason: "\(error)",
                                               suggestion: "this is a bug in nimbusd; please report it with the daemon's log"))
        }
    }

    static let requestExample = "send one JSON-RPC 2.0 object per line, e.g. {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}"

    /// Not JSON at all (parse error), or JSON that is not a request object.
    private func rejectUnreadable(_ data: Data, _ error: any Error, _ client: ControlClientConnection) {
        guard let shape = try? decoder.decode(JSONShape.self, from: data) else {
            let reason = String(validating: data, as: UTF8.self) == nil ? "the line is not valid UTF-8" : Self.syntaxProblem(error)
            return reply(nil, client, RPCError(.parseError, "the line is not valid JSON", reason: reason, suggestion: Self.requestExample),
                         always: true)
        }
        let reason: String
        switch shape {
        case .array: reason = "batches (JSON arrays) are not supported; send one request per line"
        case .object: reason = Self.explain(error)
        case .scalar: reason = "a request must be a JSON object"
        }
        // Find the id if it is readable, so the client can match the error to its request.
        let id = (try? decoder.decode(IDOnly.self, from: data))?.id
        reply(id, client, RPCError(.invalidRequest, "not a valid JSON-RPC request", reason: reason, suggestion: Self.requestExample),
              always: true)
    }

    private struct IDOnly: Decodable { var id: RequestID? }

    /// What a line of valid JSON is at its top level, read without decoding its contents.
    private enum JSONShape: Decodable {
        case array, object, scalar

        private struct AnyKey: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            if (try? decoder.unkeyedContainer()) != nil {
                self = .array
            } else if (try? decoder.container(keyedBy: AnyKey.self)) != nil {
                self = .object
            } else {
                _ = try decoder.singleValueContainer()
                self = .scalar
            }
        }
    }

    /// The parameters of `request` as `P`; nil when absent.
    func params<P: Decodable & Sendable>(_ type: P.Type, _ request: ControlRequest) throws -> P? {
        do {
            return try decoder.decode(ParamsOf<P>.self, from: request.data).params
        } catch let error as DecodingError {
            let unrepresentable = ParameterNumbers.isUnlocated(error)
                ? ParameterNumbers.explainUnrepresentable(type, request: request.data, decoder: decoder) : nil
            throw RPCError(.invalidParams, "invalid parameters for \(request.method.rawValue)", reason: unrepresentable ?? Self.explain(error),
                           suggestion: "see PROTOCOL.md for the parameters of \(request.method.rawValue)")
        }
    }

    /// Refuses a parameter the method does not take, naming it (and the one probably meant):
    /// ignoring it would do something else than asked, e.g. list the whole root for `paths`.
    func checkParameterNames(_ request: ControlRequest) throws {
        guard let names = (try? decoder.decode(ParameterNamesOf.self, from: request.data))?.params?.names else { return }
        let method = request.method
        let known = method.parameterNames
        guard let unknown = names.sorted().first(where: { !known.contains($0) }) else { return }
        let takes = known.isEmpty ? "\(method.rawValue) takes no parameters"
                                  : "\(method.rawValue) takes " + known.joined(separator: ", ")
        let near = known.map { (name: $0, distance: editDistance(Array(unknown.lowercased()), Array($0.lowercased()))) }
            .filter { $0.distance <= max(1, min(2, unknown.count / 3)) }
            .min { $0.distance < $1.distance }
        throw RPCError(.invalidParams, "unknown parameter \"\(unknown)\" for \(method.rawValue)", reason: takes,
                       suggestion: near.map { "did you mean \"\($0.name)\"?" }
                           ?? "remove it; see PROTOCOL.md for the parameters of \(method.rawValue)")
    }

    func requiredParams<P: Decodable & Sendable>(_ type: P.Type, _ request: ControlRequest) throws -> P {
        guard let params = try params(type, request) else {
            throw RPCError(.invalidParams, "\(request.method.rawValue) needs parameters", reason: "params: missing",
                           suggestion: "see PROTOCOL.md for the parameters of \(request.method.rawValue)")
        }
        return params
    }

    /// What is wrong with text that is not JSON, as the parser says it.
    static func syntaxProblem(_ error: any Error) -> String {
        if case .dataCorrupted(let context) = error as? DecodingError, let underlying = context.underlyingError {
            return "\(underlying)"
        }
        return "it is not well-formed JSON"
    }

    /// `field: expected a boolean`, from a decoding error.
    static func explain(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func location(_ context: DecodingError.Context, _ extra: (any CodingKey)? = nil) -> String {
            var keys = context.codingPath
            if let extra { keys.append(extra) }
            if keys.first?.stringValue == "params" { keys.removeFirst() }
            let text = keys.enumerated().map { index, key in
                key.intValue.map { "[\($0)]" } ?? (index == 0 ? key.stringValue : "." + key.stringValue)
            }.joined()
            return text.isEmpty ? "params" : text
        }
        switch error {
        case .typeMismatch(let type, let context): return "\(location(context)): expected \(describe(type))"
        case .valueNotFound(let type, let context): return "\(location(context)): expected \(describe(type)), got null"
        case .keyNotFound(let key, let context): return "\(location(context, key)): missing"
        case .dataCorrupted(let context): return "\(location(context)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }

    static func describe(_ type: Any.Type) -> String {
        if type == Bool.self { return "a boolean" }
        if type == String.self { return "a string" }
        if [Int.self, Int64.self, UInt64.self, Int32.self, UInt32.self].contains(where: { $0 == type }) { return "an integer" }
        if type == Double.self { return "a number" }
        if "\(type)".hasPrefix("Array") { return "an array" }
        return "an object"
    }

    // MARK: - Answering

    /// Answers at once. Nothing is sent for a notification (no id), except for errors about
    /// lines that could not be read as a request at all (`always`).
    func reply(_ id: RequestID?, _ client: ControlClientConnection, _ error: RPCError, always: Bool = false) {
        guard id != nil || always else { return }
        server.respond(client, ErrorResponse(id: id, error: error))
    }

    func answer<R: Codable & Sendable>(_ request: ControlRequest, _ result: R) {
        guard let id = request.id else { return }
        server.respond(request.client, Response(id: id, result: result))
    }

    /// For an answer that comes later from another thread. Refuses when the connection has
    /// too many answers outstanding.
    func later(_ request: ControlRequest) throws -> ControlReplier {
        guard request.client.inFlight < server.limits.maximumInFlight else {
            throw RPCError(.busy, "too many requests waiting on this connection",
                           reason: "\(request.client.inFlight) requests of this connection are not answered yet",
                           suggestion: "wait for answers before sending more requests")
        }
        request.client.inFlight += 1
        return ControlReplier(server: server, clientID: request.client.id, id: request.id)
    }
}
