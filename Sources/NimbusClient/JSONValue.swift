import FoundationEssentials
import NimbusProtocol

/// Any JSON value. The client keeps what the daemon sent in this form next to the typed
/// result, so `nimbusctl --json` prints every field the daemon sent, including fields newer
/// than this client.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    /// Integers stay exact (nanosecond times do not fit a Double).
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The value as one line of JSON with sorted keys, byte for byte what the protocol's
    /// encoder (`JSONRPC.makeEncoder`) writes, without going through `Encodable`: for a listing
    /// of 10 000 files that took most of `nimbusctl --json ls -r`.
    public var jsonText: String {
        var text: [UInt8] = []
        write(into: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Any Encodable value, converted by a round trip through JSON.
    public init(encoding value: some Encodable) throws {
        self = try JSONValue(parsing: [UInt8](try JSONRPC.makeEncoder().encode(value)))
    }
}
