import FoundationEssentials

/// The JSON-RPC 2.0 envelope of the control protocol (DESIGN §7, PROTOCOL.md): one object
/// per line. Requests carry an `id` and get exactly one response with the same `id`;
/// notifications carry none and get no answer. The daemon sends notifications (`event`,
/// `progress`) on a connection that asked for `watch`.
public enum JSONRPC {
    public static let version = "2.0"

    /// The encoder both sides use: sorted keys (stable output for scripts and diffs), no
    /// escaped slashes (paths stay readable), no pretty printing (one object per line).
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    public static func makeDecoder() -> JSONDecoder { JSONDecoder() }

    /// One line to send: the encoded value followed by "\n".
    public static func line(_ value: some Encodable, encoder: JSONEncoder = makeEncoder()) throws -> [UInt8] {
        var bytes = [UInt8](try encoder.encode(value))
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}

/// A request id: JSON-RPC allows a string or a number (we take integers only; fractions
/// are refused as an invalid request).
public enum RequestID: Hashable, Sendable, Codable, CustomStringConvertible {
    case number(Int64)
    case string(String)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            self = .number(number)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "an id must be an integer or a string")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .number(let n): try container.encode(n)
        case .string(let s): try container.encode(s)
        }
    }

    public var description: String {
        switch self {
        case .number(let n): "\(n)"
        case .string(let s): "\"\(s)\""
        }
    }
}

/// A request as a client writes it. `Params` is the method's parameter type from
/// Methods.swift (`NoParams` for methods without parameters).
public struct Request<Params: Codable & Sendable>: Codable, Sendable {
    public var jsonrpc = JSONRPC.version
    public var id: RequestID
    public var method: String
    public var params: Params

    public init(id: RequestID, method: String, params: Params) {
        self.id = id
        self.method = method
        self.params = params
    }

    public init(id: RequestID, method: ControlMethod, params: Params) {
        self.init(id: id, method: method.rawValue, params: params)
    }
}

/// A successful response.
public struct Response<Result: Codable & Sendable>: Codable, Sendable {
    public var jsonrpc = JSONRPC.version
    public var id: RequestID
    public var result: Result

    public init(id: RequestID, result: Result) {
        self.id = id
        self.result = result
    }
}

/// A failed response. `id` is null when the request's id could not be read (bad JSON).
public struct ErrorResponse: Codable, Sendable {
    public var jsonrpc = JSONRPC.version
    public var id: RequestID?
    public var error: RPCError

    public init(id: RequestID?, error: RPCError) {
        self.id = id
        self.error = error
    }

    // JSON-RPC requires the "id" member even when it is null.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(jsonrpc, forKey: .jsonrpc)
        try container.encode(id, forKey: .id)
        try container.encode(error, forKey: .error)
    }
}

/// A message without an id, sent by the daemon to `watch` subscribers.
public struct Notification<Params: Codable & Sendable>: Codable, Sendable {
    public var jsonrpc = JSONRPC.version
    public var method: String
    public var params: Params

    public init(method: String, params: Params) {
        self.method = method
        self.params = params
    }
}

/// The parts of any incoming line that tell what it is, read before its payload: the
/// server reads requests with it, a client tells responses from notifications.
public struct MessageHead: Decodable, Sendable {
    public var jsonrpc: String?
    public var id: RequestID?
    public var method: String?
    public var error: RPCError?

    public enum Kind: Sendable, Equatable {
        case request, notification, response, errorResponse, invalid
    }

    public var kind: Kind {
        if error != nil { return .errorResponse }
        switch (id, method) {
        case (_?, _?): return .request
        case (nil, _?): return .notification
        case (_?, nil): return .response
        case (nil, nil): return .invalid
        }
    }
}

/// Decodes only `params` of a line, for the method's own type.
public struct ParamsOf<Params: Decodable & Sendable>: Decodable, Sendable {
    public var params: Params?
}

/// The member names of a line's `params` object (nil when `params` is absent or no object).
public struct ParameterNamesOf: Decodable, Sendable {
    public var params: Names?

    public struct Names: Decodable, Sendable {
        public var names: [String]
        public init(from decoder: any Decoder) throws {
            names = try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        params = try? container.decodeIfPresent(Names.self, forKey: AnyKey(stringValue: "params"))
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

/// Decodes only `result` of a response line.
public struct ResultOf<Result: Decodable & Sendable>: Decodable, Sendable {
    public var result: Result
}

/// For methods that take no parameters. Any object (or none) is accepted.
public struct NoParams: Codable, Sendable, Equatable {
    public init() {}
    public init(from decoder: any Decoder) throws {}
    public func encode(to encoder: any Encoder) throws { _ = encoder.container(keyedBy: NoKeys.self) }
    enum NoKeys: CodingKey {}
}

extension JSONRPC {
    /// Decodes a response line: the result, or the daemon's error thrown as `RPCError`.
    public static func decodeResult<Result: Decodable & Sendable>(_ type: Result.Type, from line: some Collection<UInt8>,
                                                                  decoder: JSONDecoder = makeDecoder()) throws -> Result {
        let data = Data(line)
        let head = try decoder.decode(MessageHead.self, from: data)
        if let error = head.error { throw error }
        return try decoder.decode(ResultOf<Result>.self, from: data).result
    }
}
