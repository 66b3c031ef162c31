/// The D-Bus type system (the specification's "Type System"): what a signature names.
/// Pure values; `DBusWriter` and `DBusReader` turn them into the wire format and back.
public indirect enum DBusType: Equatable, Sendable {
    case byte, boolean, int16, uint16, int32, uint32, int64, uint64, double
    case string, objectPath, signature, unixFD
    case variant
    case array(DBusType)
    /// Only as the element of an array: `a{sv}` is `.array(.dictEntry(.string, .variant))`.
    case dictEntry(DBusType, DBusType)
    case structure([DBusType])

    /// The type's signature, as it appears in a message.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .variant: "v"
        case .array(let element): "a" + element.signature
        case .dictEntry(let key, let value): "{" + key.signature + value.signature + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    /// The boundary a value of this type starts on (the specification's alignment table).
    var alignment: Int {
        switch self {
        case .byte, .signature, .variant: 1
        case .int16, .uint16: 2
        case .boolean, .int32, .uint32, .string, .objectPath, .unixFD, .array: 4
        case .int64, .uint64, .double, .dictEntry, .structure: 8
        }
    }

    /// Parses a signature of any number of complete types ("sa{sv}i" is three).
    public static func parse(_ signature: String) throws(DBusError) -> [DBusType] {
        var characters = Array(signature.utf8)[...]
        var types: [DBusType] = []
        while !characters.isEmpty { types.append(try parseOne(&characters, depth: 0, whole: signature)) }
        return types
    }

    private static func parseOne(_ rest: inout ArraySlice<UInt8>, depth: Int, whole: String) throws(DBusError) -> DBusType {
        // The specification caps nesting at 32 arrays plus 32 structures.
        guard depth < 64, let code = rest.popFirst() else { throw DBusError.malformed("bad signature \"\(whole)\"") }
        switch code {
        case UInt8(ascii: "y"): return .byte
        case UInt8(ascii: "b"): return .boolean
        case UInt8(ascii: "n"): return .int16
        case UInt8(ascii: "q"): return .uint16
        case UInt8(ascii: "i"): return .int32
        case UInt8(ascii: "u"): return .uint32
        case UInt8(ascii: "x"): return .int64
        case UInt8(ascii: "t"): return .uint64
        case UInt8(ascii: "d"): return .double
        case UInt8(ascii: "s"): return .string
        case UInt8(ascii: "o"): return .objectPath
        case UInt8(ascii: "g"): return .signature
        case UInt8(ascii: "h"): return .unixFD
        case UInt8(ascii: "v"): return .variant
        case UInt8(ascii: "a"):
            if rest.first == UInt8(ascii: "{") {
                rest.removeFirst()
                let key = try parseOne(&rest, depth: depth + 1, whole: whole)
                let value = try parseOne(&rest, depth: depth + 1, whole: whole)
                guard rest.popFirst() == UInt8(ascii: "}"), key.isBasic else { throw DBusError.malformed("bad dictionary in signature \"\(whole)\"") }
                return .array(.dictEntry(key, value))
            }
            return .array(try parseOne(&rest, depth: depth + 1, whole: whole))
        case UInt8(ascii: "("):
            var fields: [DBusType] = []
            while rest.first != UInt8(ascii: ")") {
                guard !rest.isEmpty else { throw DBusError.malformed("unclosed structure in signature \"\(whole)\"") }
                fields.append(try parseOne(&rest, depth: depth + 1, whole: whole))
            }
            rest.removeFirst()
            guard !fields.isEmpty else { throw DBusError.malformed("empty structure in signature \"\(whole)\"") }
            return .structure(fields)
        default:
            throw DBusError.malformed("bad signature \"\(whole)\"")
        }
    }

    var isBasic: Bool {
        switch self {
        case .variant, .array, .dictEntry, .structure: false
        default: true
        }
    }
}

/// One D-Bus value with its type. An array keeps its element type, so an empty `as` and an
/// empty `a{sv}` still marshal with the right signature.
public indirect enum DBusValue: Equatable, Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    case unixFD(UInt32)
    case variant(DBusValue)
    case array(DBusType, [DBusValue])
    case dictEntry(DBusValue, DBusValue)
    case structure([DBusValue])

    public var type: DBusType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .variant: .variant
        case .array(let element, _): .array(element)
        case .dictEntry(let key, let value): .dictEntry(key.type, value.type)
        case .structure(let fields): .structure(fields.map(\.type))
        }
    }

    /// `as`: an array of strings.
    public static func strings(_ items: [String]) -> DBusValue { .array(.string, items.map(DBusValue.string)) }

    /// `a{sv}`: a dictionary of variants, in the order given (hints, properties).
    public static func variantDictionary(_ entries: [(String, DBusValue)]) -> DBusValue {
        .array(.dictEntry(.string, .variant), entries.map { .dictEntry(.string($0.0), .variant($0.1)) })
    }

    public var stringValue: String? {
        switch self {
        case .string(let s), .objectPath(let s), .signature(let s): s
        case .variant(let inner): inner.stringValue
        default: nil
        }
    }

    public var uint32Value: UInt32? {
        switch self {
        case .uint32(let v): v
        case .variant(let inner): inner.uint32Value
        default: nil
        }
    }

    /// The strings of an `as`, or nil.
    public var stringArray: [String]? {
        guard case .array(.string, let items) = self else { return nil }
        return items.compactMap(\.stringValue)
    }
}

/// What can go wrong talking D-Bus. The descriptions are plain English for the daemon's log.
/// A protocol error, not a syscall failure (those are `SystemError`s of the socket, turned into
/// `closed` or `noBus` where the bus simply is not there): the bus's answers are its subject.
public enum DBusError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No session bus to talk to (no address, or none this client can use).
    case noBus(String)
    case authenticationRejected(String)
    case timedOut(String)
    case malformed(String)
    /// The peer closed the connection.
    case closed
    /// An error reply: its name (`org.freedesktop.DBus.Error.ServiceUnknown`) and message.
    case remote(name: String, message: String)

    public var description: String {
        switch self {
        case .noBus(let why): "no session bus: \(why)"
        case .authenticationRejected(let answer): "the bus refused to authenticate us (\(answer))"
        case .timedOut(let what): "the bus did not answer in time (\(what))"
        case .malformed(let what): "unexpected data from the bus: \(what)"
        case .closed: "the bus closed the connection"
        case .remote(let name, let message): message.isEmpty ? name : "\(name): \(message)"
        }
    }
}
