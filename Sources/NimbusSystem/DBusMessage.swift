/// One D-Bus message: the fixed header, the header fields this client uses, and the body
/// (the specification's "Message Format"). Encoding and decoding are pure.
public struct DBusMessage: Equatable, Sendable {
    public enum Kind: UInt8, Sendable {
        case methodCall = 1, methodReturn = 2, error = 3, signal = 4
    }

    public var kind: Kind
    /// 0x1: no reply expected; 0x2: do not start a service for the destination.
    public var flags: UInt8 = 0
    public var serial: UInt32 = 0
    public var path: String?
    public var interface: String?
    public var member: String?
    public var errorName: String?
    public var replySerial: UInt32?
    public var destination: String?
    public var sender: String?
    public var body: [DBusValue] = []

    public static let noReplyExpected: UInt8 = 0x1

    public init(kind: Kind, path: String? = nil, interface: String? = nil, member: String? = nil,
                destination: String? = nil, body: [DBusValue] = []) {
        self.kind = kind
        self.path = path
        self.interface = interface
        self.member = member
        self.destination = destination
        self.body = body
    }

    public static func methodCall(destination: String, path: String, interface: String, member: String,
                                  body: [DBusValue] = []) -> DBusMessage {
        DBusMessage(kind: .methodCall, path: path, interface: interface, member: member, destination: destination, body: body)
    }

    /// The reply to `call`, addressed to its sender.
    public static func methodReturn(to call: DBusMessage, body: [DBusValue] = []) -> DBusMessage {
        var reply = DBusMessage(kind: .methodReturn, destination: call.sender, body: body)
        reply.replySerial = call.serial
        return reply
    }

    public static func signal(path: String, interface: String, member: String, destination: String? = nil,
                              body: [DBusValue] = []) -> DBusMessage {
        DBusMessage(kind: .signal, path: path, interface: interface, member: member, destination: destination, body: body)
    }

    public var signature: String { body.map(\.type.signature).joined() }

    /// The header field codes of the specification.
    enum Field: UInt8 {
        case path = 1, interface, member, errorName, replySerial, destination, sender, signature, unixFDs
    }

    /// The message in the wire format, little endian, with `serial`.
    public func encoded() -> [UInt8] {
        var fields: [DBusValue] = []
        func add(_ field: Field, _ value: DBusValue?) {
            if let value { fields.append(.structure([.byte(field.rawValue), .variant(value)])) }
        }
        add(.path, path.map(DBusValue.objectPath))
        add(.interface, interface.map(DBusValue.string))
        add(.member, member.map(DBusValue.string))
        add(.errorName, errorName.map(DBusValue.string))
        add(.replySerial, replySerial.map(DBusValue.uint32))
        add(.destination, destination.map(DBusValue.string))
        add(.sender, sender.map(DBusValue.string))
        if !body.isEmpty { add(.signature, .signature(signature)) }

        var header = DBusWriter(bytes: [UInt8(ascii: "l"), kind.rawValue, flags, 1])
        header.write(.uint32(0))  // body length, filled in below
        header.write(.uint32(serial))
        header.write(.array(.structure([.byte, .variant]), fields))
        header.align(8)
        var message = DBusWriter(bytes: header.bytes)
        message.write(body)
        var bytes = message.bytes
        let bodyLength = UInt32(bytes.count - header.bytes.count)
        for index in 0..<4 { bytes[4 + index] = UInt8(truncatingIfNeeded: bodyLength >> (8 * UInt32(index))) }
        return bytes
    }

    /// The length of the whole message whose first 16 bytes are `prefix`, or nil if those
    /// bytes cannot start a message. Lets a stream reader know how much to wait for.
    public static func totalLength(ofPrefix prefix: ArraySlice<UInt8>) -> Int? {
        guard prefix.count >= 16, let first = prefix.first, first == UInt8(ascii: "l") || first == UInt8(ascii: "B") else { return nil }
        var reader = DBusReader(bytes: Array(prefix), offset: 4, bigEndian: first == UInt8(ascii: "B"))
        guard case .uint32(let bodyLength)? = try? reader.read(.uint32),
              case .uint32? = try? reader.read(.uint32),
              case .uint32(let fieldsLength)? = try? reader.read(.uint32) else { return nil }
        let header = (16 + Int(fieldsLength) + 7) / 8 * 8
        return header + Int(bodyLength)
    }

    /// Decodes one complete message (as `totalLength` measured it).
    public static func decode(_ bytes: [UInt8]) throws(DBusError) -> DBusMessage {
        guard bytes.count >= 16, let total = totalLength(ofPrefix: bytes[...]), total == bytes.count else {
            throw DBusError.malformed("a message of \(bytes.count) bytes with a bad length")
        }
        guard let kind = Kind(rawValue: bytes[1]) else { throw DBusError.malformed("message type \(bytes[1])") }
        guard bytes[3] == 1 else { throw DBusError.malformed("protocol version \(bytes[3])") }
        var reader = DBusReader(bytes: bytes, offset: 8, bigEndian: bytes[0] == UInt8(ascii: "B"))
        var message = DBusMessage(kind: kind)
        message.flags = bytes[2]
        guard case .uint32(let serial) = try reader.read(.uint32) else { throw DBusError.malformed("serial") }
        message.serial = serial
        guard case .array(_, let fields) = try reader.read(.array(.structure([.byte, .variant]))) else {
            throw DBusError.malformed("header fields")
        }
        var signature = ""
        for case .structure(let pair) in fields {
            guard pair.count == 2, case .byte(let code) = pair[0], case .variant(let value) = pair[1] else { continue }
            switch Field(rawValue: code) {
            case .path: message.path = value.stringValue
            case .interface: message.interface = value.stringValue
            case .member: message.member = value.stringValue
            case .errorName: message.errorName = value.stringValue
            case .replySerial: message.replySerial = value.uint32Value
            case .destination: message.destination = value.stringValue
            case .sender: message.sender = value.stringValue
            case .signature: signature = value.stringValue ?? ""
            case .unixFDs, nil: break  // unknown fields must be ignored
            }
        }
        try reader.align(8)
        message.body = try reader.read(DBusType.parse(signature))
        guard reader.isAtEnd else { throw DBusError.malformed("the body is longer than its signature \"\(signature)\"") }
        return message
    }
}
