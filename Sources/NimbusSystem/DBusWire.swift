/// Marshals D-Bus values (the specification's "Marshaling (Wire Format)"), always little
/// endian. Offsets, and so alignment padding, count from the start of the message, which is
/// why a body is written by a writer whose `bytes` already hold the padded header.
public struct DBusWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(bytes: [UInt8] = []) { self.bytes = bytes }

    /// Pads with zeros to the next multiple of `boundary`.
    public mutating func align(_ boundary: Int) {
        while bytes.count % boundary != 0 { bytes.append(0) }
    }

    public mutating func write(_ values: [DBusValue]) {
        for value in values { write(value) }
    }

    public mutating func write(_ value: DBusValue) {
        align(value.type.alignment)
        switch value {
        case .byte(let v): bytes.append(v)
        case .boolean(let v): appendInteger(UInt32(v ? 1 : 0))
        case .int16(let v): appendInteger(UInt16(bitPattern: v))
        case .uint16(let v): appendInteger(v)
        case .int32(let v): appendInteger(UInt32(bitPattern: v))
        case .uint32(let v), .unixFD(let v): appendInteger(v)
        case .int64(let v): appendInteger(UInt64(bitPattern: v))
        case .uint64(let v): appendInteger(v)
        case .double(let v): appendInteger(v.bitPattern)
        case .string(let s), .objectPath(let s):
            let utf8 = Array(s.utf8)
            appendInteger(UInt32(utf8.count))
            bytes += utf8
            bytes.append(0)
        case .signature(let s):
            let utf8 = Array(s.utf8)
            bytes.append(UInt8(truncatingIfNeeded: utf8.count))
            bytes += utf8
            bytes.append(0)
        case .variant(let inner):
            write(.signature(inner.type.signature))
            write(inner)
        case .array(let element, let items):
            let lengthAt = bytes.count
            appendInteger(UInt32(0))
            // The padding before the first element is not part of the array's length.
            align(element.alignment)
            let start = bytes.count
            for item in items { write(item) }
            let length = UInt32(bytes.count - start)
            for index in 0..<4 { bytes[lengthAt + index] = UInt8(truncatingIfNeeded: length >> (8 * UInt32(index))) }
        case .dictEntry(let key, let value):
            write(key)
            write(value)
        case .structure(let fields):
            write(fields)
        }
    }

    private mutating func appendInteger<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }
}

/// Reads D-Bus values from a message in either byte order (a peer's messages reach us in its
/// own order; the bus only relays them). Every length is checked against what is there.
public struct DBusReader {
    let bytes: [UInt8]
    public private(set) var offset: Int
    let bigEndian: Bool

    public init(bytes: [UInt8], offset: Int = 0, bigEndian: Bool = false) {
        self.bytes = bytes
        self.offset = offset
        self.bigEndian = bigEndian
    }

    public var isAtEnd: Bool { offset >= bytes.count }

    public mutating func align(_ boundary: Int) throws(DBusError) {
        let target = (offset + boundary - 1) / boundary * boundary
        guard target <= bytes.count else { throw DBusError.malformed("message ends inside padding") }
        offset = target
    }

    public mutating func read(_ types: [DBusType]) throws(DBusError) -> [DBusValue] {
        var values: [DBusValue] = []
        for type in types { values.append(try read(type, depth: 0)) }
        return values
    }

    public mutating func read(_ type: DBusType) throws(DBusError) -> DBusValue { try read(type, depth: 0) }

    private mutating func read(_ type: DBusType, depth: Int) throws(DBusError) -> DBusValue {
        guard depth < 64 else { throw DBusError.malformed("values nested too deeply") }
        try align(type.alignment)
        switch type {
        case .byte: return .byte(try takeByte())
        case .boolean:
            let raw: UInt32 = try integer()
            guard raw <= 1 else { throw DBusError.malformed("boolean \(raw)") }
            return .boolean(raw == 1)
        case .int16: return .int16(Int16(bitPattern: try integer()))
        case .uint16: return .uint16(try integer())
        case .int32: return .int32(Int32(bitPattern: try integer()))
        case .uint32: return .uint32(try integer())
        case .unixFD: return .unixFD(try integer())
        case .int64: return .int64(Int64(bitPattern: try integer()))
        case .uint64: return .uint64(try integer())
        case .double: return .double(Double(bitPattern: try integer()))
        case .string: return .string(try text(length: Int(try integer() as UInt32)))
        case .objectPath: return .objectPath(try text(length: Int(try integer() as UInt32)))
        case .signature: return .signature(try text(length: Int(try takeByte())))
        case .variant:
            let signature = try text(length: Int(try takeByte()))
            let types = try DBusType.parse(signature)
            guard types.count == 1 else { throw DBusError.malformed("variant signature \"\(signature)\"") }
            return .variant(try read(types[0], depth: depth + 1))
        case .array(let element):
            let length = Int(try integer() as UInt32)
            guard length <= 1 << 26 else { throw DBusError.malformed("array of \(length) bytes") }
            try align(element.alignment)
            let end = offset + length
            guard end <= bytes.count else { throw DBusError.malformed("array runs past the end of the message") }
            var items: [DBusValue] = []
            while offset < end { items.append(try read(element, depth: depth + 1)) }
            guard offset == end else { throw DBusError.malformed("array element runs past the array") }
            return .array(element, items)
        case .dictEntry(let key, let value):
            return .dictEntry(try read(key, depth: depth + 1), try read(value, depth: depth + 1))
        case .structure(let fields):
            var values: [DBusValue] = []
            for field in fields { values.append(try read(field, depth: depth + 1)) }
            return .structure(values)
        }
    }

    private mutating func take(_ count: Int) throws(DBusError) -> ArraySlice<UInt8> {
        guard count >= 0, offset + count <= bytes.count else { throw DBusError.malformed("message ends inside a value") }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    private mutating func takeByte() throws(DBusError) -> UInt8 {
        guard offset < bytes.count else { throw DBusError.malformed("message ends inside a value") }
        defer { offset += 1 }
        return bytes[offset]
    }

    private mutating func integer<T: FixedWidthInteger>() throws(DBusError) -> T {
        let raw = try take(MemoryLayout<T>.size)
        var value: T = 0
        for (index, byte) in raw.enumerated() {
            let shift = bigEndian ? (raw.count - 1 - index) * 8 : index * 8
            value |= T(truncatingIfNeeded: byte) << T(shift)
        }
        return value
    }

    /// A string's bytes and its terminating NUL; strings must be UTF-8 without NUL.
    private mutating func text(length: Int) throws(DBusError) -> String {
        let raw = try take(length + 1)
        guard raw.last == 0, !raw.dropLast().contains(0), let string = String(validating: raw.dropLast(), as: UTF8.self) else {
            throw DBusError.malformed("a string that is not UTF-8 or not terminated")
        }
        return string
    }
}
