/// One change to the journal's key/value map. Keys and values are opaque bytes: the daemon
/// uses path bytes as keys and encodes its values with `ByteWriter`.
public enum JournalRecord: Sendable, Equatable {
    case put(key: [UInt8], value: [UInt8])
    case remove(key: [UInt8])

    public var key: [UInt8] {
        switch self {
        case let .put(key, _), let .remove(key): key
        }
    }
}

/// Why reading records stopped before the end of a file.
public enum RecordDamage: Sendable, Equatable, CustomStringConvertible {
    /// The file ends inside a record: the usual trace of a crash during a write.
    case torn
    /// The length field is zero or above `RecordFormat.maxRecordLength`.
    case invalidLength(UInt32)
    /// The bytes are not what was written.
    case checksumMismatch
    /// The checksum matches but the content makes no sense (unknown type, key too long):
    /// written by a newer version, or a bug.
    case malformed

    public var description: String {
        switch self {
        case .torn: "torn record (the file ends inside it)"
        case let .invalidLength(length): "invalid record length \(length)"
        case .checksumMismatch: "checksum mismatch"
        case .malformed: "malformed record"
        }
    }
}

/// Framing of records, the same in the snapshot and the log (pure, works on bytes):
///
///     length   u32 LE   bytes of type + payload, 1...maxRecordLength
///     crc      u32 LE   CRC-32C of type + payload
///     type     u8       1 = put, 2 = remove
///     payload           put: key length (u32 LE), key, value; remove: key
///
/// The checksum makes a torn or damaged record detectable, and the length bound keeps a
/// damaged length from being taken for a huge record.
enum RecordFormat {
    static let frameHeaderSize = 8
    /// Far above any real record (a path plus a few hundred bytes of metadata).
    static let maxRecordLength = 16 << 20

    private static let putType: UInt8 = 1
    private static let removeType: UInt8 = 2

    /// Appends the framed record to `writer`.
    static func encode(_ record: JournalRecord, into writer: inout ByteWriter) {
        let start = writer.count
        writer.writeUInt32(0)  // length, known below
        writer.writeUInt32(0)  // checksum, known below
        switch record {
        case let .put(key, value):
            writer.writeUInt8(putType)
            writer.writeUInt32(UInt32(key.count))
            writer.writeBytes(key)
            writer.writeBytes(value)
        case let .remove(key):
            writer.writeUInt8(removeType)
            writer.writeBytes(key)
        }
        let length = writer.count - start - frameHeaderSize
        precondition(length <= maxRecordLength, "a journal record is limited to \(maxRecordLength) bytes")
        let checksum = writer.bytes.withUnsafeBytes { all in
            CRC32C.checksum(UnsafeRawBufferPointer(rebasing: all[(start + frameHeaderSize)...]))
        }
        writer.overwriteUInt32(UInt32(length), at: start)
        writer.overwriteUInt32(checksum, at: start + 4)
    }

    static func encode(_ records: [JournalRecord]) -> [UInt8] {
        var writer = ByteWriter()
        for record in records { encode(record, into: &writer) }
        return writer.bytes
    }

    /// Where a scan of consecutive records stopped.
    struct Scan: Equatable {
        /// Offset just past the last good record: everything from here on is to be dropped.
        var validEnd: Int
        var recordCount: Int
        /// Nil when the records ran exactly to the end of the bytes.
        var damage: RecordDamage?
    }

    /// Decodes consecutive records from `start` and hands each to `visit`, stopping at the
    /// end of the bytes or at the first record that is torn or damaged. Never reads outside
    /// `bytes` and never allocates more than a record's actual bytes.
    static func scan(_ bytes: UnsafeRawBufferPointer, from start: Int,
                     _ visit: (JournalRecord) -> Void) -> Scan {
        var offset = start
        var count = 0
        while offset < bytes.count {
            switch decodeRecord(in: bytes, at: offset) {
            case let .record(record, next):
                visit(record)
                count += 1
                offset = next
            case let .damaged(damage):
                return Scan(validEnd: offset, recordCount: count, damage: damage)
            }
        }
        return Scan(validEnd: offset, recordCount: count, damage: nil)
    }

    /// How many records `bytes` holds from `start`, at most: the frames counted by their length
    /// fields alone, without checking them (for reserving room before a `scan`).
    static func frameCount(_ bytes: [UInt8], from start: Int) -> Int {
        bytes.withUnsafeBytes { bytes in
            var offset = start
            var count = 0
            while bytes.count - offset >= frameHeaderSize {
                let length = readUInt32(bytes, at: offset)
                guard length >= 1, length <= maxRecordLength else { break }
                offset += frameHeaderSize + Int(length)
                count += 1
            }
            return count
        }
    }

    static func scan(_ bytes: [UInt8], from start: Int = 0, _ visit: (JournalRecord) -> Void) -> Scan {
        bytes.withUnsafeBytes { scan($0, from: start, visit) }
    }

    private enum Decoded {
        case record(JournalRecord, next: Int)
        case damaged(RecordDamage)
    }

    private static func decodeRecord(in bytes: UnsafeRawBufferPointer, at offset: Int) -> Decoded {
        let available = bytes.count - offset
        guard available >= frameHeaderSize else { return .damaged(.torn) }
        let length = readUInt32(bytes, at: offset)
        guard length >= 1, length <= maxRecordLength else { return .damaged(.invalidLength(length)) }
        let bodyStart = offset + frameHeaderSize
        let bodyEnd = bodyStart + Int(length)
        guard bodyEnd <= bytes.count else { return .damaged(.torn) }
        let body = UnsafeRawBufferPointer(rebasing: bytes[bodyStart..<bodyEnd])
        guard CRC32C.checksum(body) == readUInt32(bytes, at: offset + 4) else { return .damaged(.checksumMismatch) }

        let payloadStart = bodyStart + 1
        switch body[0] {
        case putType:
            guard bodyEnd - payloadStart >= 4 else { return .damaged(.malformed) }
            let keyLength = Int(readUInt32(bytes, at: payloadStart))
            let keyStart = payloadStart + 4
            guard keyLength <= bodyEnd - keyStart else { return .damaged(.malformed) }
            let key = copy(bytes, keyStart..<(keyStart + keyLength))
            let value = copy(bytes, (keyStart + keyLength)..<bodyEnd)
            return .record(.put(key: key, value: value), next: bodyEnd)
        case removeType:
            return .record(.remove(key: copy(bytes, payloadStart..<bodyEnd)), next: bodyEnd)
        default:
            return .damaged(.malformed)
        }
    }

    @inline(__always)
    private static func readUInt32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inline(__always)
    private static func copy(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> [UInt8] {
        [UInt8](UnsafeRawBufferPointer(rebasing: bytes[range]))
    }
}
