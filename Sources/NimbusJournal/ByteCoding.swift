/// Builds a compact little-endian binary encoding. The journal stores values as opaque
/// bytes; its owner encodes them with this writer and decodes them with `ByteReader`, so
/// both sides of the format use one set of well-tested primitives.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(reservingCapacity capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var count: Int { bytes.count }
    public var isEmpty: Bool { bytes.isEmpty }

    public mutating func writeUInt8(_ value: UInt8) { bytes.append(value) }

    public mutating func writeUInt32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    public mutating func writeUInt64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Two's complement, so negative times and sizes round-trip.
    public mutating func writeInt64(_ value: Int64) { writeUInt64(UInt64(bitPattern: value)) }

    /// LEB128: seven bits per byte, low bits first; small numbers (lengths, counts) take one byte.
    public mutating func writeVarint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// The bytes as they are, without a length: the reader must know where they end.
    public mutating func writeBytes(_ other: [UInt8]) { bytes.append(contentsOf: other) }

    /// A varint length, then the bytes.
    public mutating func writeLengthPrefixed(_ other: [UInt8]) {
        writeVarint(UInt64(other.count))
        bytes.append(contentsOf: other)
    }

    /// Overwrites four bytes written earlier (a length or checksum known only afterwards).
    mutating func overwriteUInt32(_ value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { bytes.replaceSubrange(offset..<(offset + 4), with: $0) }
    }

    mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    /// Empties the buffer, keeping its room for the next records unless it grew large: the
    /// journal's buffer must not pin the megabytes of one big batch (an initial sync) for
    /// the life of the daemon.
    mutating func removeAllReleasingLargeRoom() { bytes.removeAll(keepingCapacity: bytes.capacity <= Self.keptCapacity) }

    static let keptCapacity = 1 << 16
}

/// Why a `ByteReader` could not read what was asked.
public enum ByteReaderError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The input ends before the value does.
    case truncated(offset: Int, needed: Int, available: Int)
    /// A varint longer than ten bytes or larger than 64 bits.
    case invalidVarint(offset: Int)

    public var description: String {
        switch self {
        case let .truncated(offset, needed, available):
            "truncated input at offset \(offset): needed \(needed) bytes, \(available) left"
        case let .invalidVarint(offset): "invalid varint at offset \(offset)"
        }
    }
}

/// Reads what `ByteWriter` wrote. Every read checks the remaining length first and throws
/// instead of trapping (a failed read leaves the position unchanged), and no length read
/// from the input can make it allocate more than the input holds: the input may be
/// damaged, and decoding it must never crash the daemon.
public struct ByteReader: Sendable {
    private let bytes: [UInt8]
    public private(set) var offset = 0

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var remainingCount: Int { bytes.count - offset }
    public var isAtEnd: Bool { offset == bytes.count }

    public mutating func readUInt8() throws(ByteReaderError) -> UInt8 {
        try require(1)
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func readUInt32() throws(ByteReaderError) -> UInt32 {
        try require(4)
        defer { offset += 4 }
        return bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) }
    }

    public mutating func readUInt64() throws(ByteReaderError) -> UInt64 {
        try require(8)
        defer { offset += 8 }
        return bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
    }

    public mutating func readInt64() throws(ByteReaderError) -> Int64 { Int64(bitPattern: try readUInt64()) }

    public mutating func readVarint() throws(ByteReaderError) -> UInt64 {
        var cursor = offset
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 70, by: 7) {
            guard cursor < bytes.count else {
                throw .truncated(offset: offset, needed: cursor - offset + 1, available: remainingCount)
            }
            let byte = bytes[cursor]
            cursor += 1
            // The tenth byte may only carry the 64th bit.
            if shift == 63 && byte > 1 { break }
            value |= UInt64(byte & 0x7F) << UInt64(shift)
            if byte & 0x80 == 0 {
                offset = cursor
                return value
            }
        }
        throw .invalidVarint(offset: offset)
    }

    public mutating func readBytes(count: Int) throws(ByteReaderError) -> [UInt8] {
        try require(count)
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    /// Reads what `writeLengthPrefixed` wrote. A length larger than the rest of the input is
    /// `truncated`, detected before anything is allocated.
    public mutating func readLengthPrefixed() throws(ByteReaderError) -> [UInt8] {
        var rest = self
        let length = try rest.readVarint()
        guard length <= UInt64(rest.remainingCount) else {
            throw .truncated(offset: rest.offset, needed: Int(clamping: length), available: rest.remainingCount)
        }
        let result = try rest.readBytes(count: Int(length))
        self = rest
        return result
    }

    private func require(_ count: Int) throws(ByteReaderError) {
        guard count >= 0, count <= remainingCount else {
            throw .truncated(offset: offset, needed: count, available: remainingCount)
        }
    }
}
