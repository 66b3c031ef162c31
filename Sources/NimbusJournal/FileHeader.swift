/// The 24 bytes at the start of the snapshot and of the log:
///
///     magic       8 bytes  "NIMBSNAP" or "NIMBJLOG"
///     version     u32 LE   format version, currently 1
///     generation  u64 LE   which snapshot this file belongs to
///     crc         u32 LE   CRC-32C of the 20 bytes before it
///
/// The generation ties a log to the snapshot it extends: compaction writes snapshot N + 1
/// before log N + 1 exists, so a log whose generation differs from the snapshot's has
/// already been folded into it (or cannot be trusted to extend it) and is never replayed.
enum FileHeader {
    enum Kind: Sendable {
        case snapshot, log

        var magic: [UInt8] {
            switch self {
            case .snapshot: Array("NIMBSNAP".utf8)
            case .log: Array("NIMBJLOG".utf8)
            }
        }
    }

    static let size = 24
    static let currentVersion: UInt32 = 1

    enum Problem: Error, Equatable, CustomStringConvertible {
        case tooShort(Int)
        case wrongMagic
        case unsupportedVersion(UInt32)
        case checksumMismatch

        var description: String {
            switch self {
            case let .tooShort(count): "header cut short (\(count) bytes)"
            case .wrongMagic: "not a Nimbus journal file (wrong magic bytes)"
            case let .unsupportedVersion(version): "unsupported format version \(version)"
            case .checksumMismatch: "header checksum mismatch"
            }
        }
    }

    static func encode(_ kind: Kind, generation: UInt64) -> [UInt8] {
        var writer = ByteWriter(reservingCapacity: size)
        writer.writeBytes(kind.magic)
        writer.writeUInt32(currentVersion)
        writer.writeUInt64(generation)
        writer.writeUInt32(CRC32C.checksum(writer.bytes))
        return writer.bytes
    }

    /// The generation recorded in a header, or why the header cannot be trusted.
    static func generation(of kind: Kind, in file: [UInt8]) throws(Problem) -> UInt64 {
        guard file.count >= size else { throw .tooShort(file.count) }
        let magicMatches = file[..<8].elementsEqual(kind.magic)
        let (version, generation, checksum, actualChecksum) = file.withUnsafeBytes { raw in
            (UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self)),
             UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 12, as: UInt64.self)),
             UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 20, as: UInt32.self)),
             CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[..<20])))
        }
        guard magicMatches else { throw .wrongMagic }
        guard checksum == actualChecksum else { throw .checksumMismatch }
        guard version == currentVersion else { throw .unsupportedVersion(version) }
        return generation
    }
}
