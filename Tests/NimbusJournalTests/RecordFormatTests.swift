import Testing
@testable import NimbusJournal
import NimbusTestSupport

@Suite struct RecordFormatTests {
    static let records: [JournalRecord] = [
        put("a", "1"),
        .put(key: [], value: []),
        .put(key: [0, 0xFF, 0x80], value: [UInt8](repeating: 7, count: 300)),
        remove("a"),
        put("dir/file.txt", "metadata"),
        .remove(key: []),
    ]

    static func scan(_ bytes: [UInt8]) -> (records: [JournalRecord], scan: RecordFormat.Scan) {
        var decoded: [JournalRecord] = []
        let scan = RecordFormat.scan(bytes) { decoded.append($0) }
        return (decoded, scan)
    }

    /// A frame with a correct checksum around an arbitrary type and payload.
    static func frame(type: UInt8, payload: [UInt8]) -> [UInt8] {
        let body = [type] + payload
        var writer = ByteWriter()
        writer.writeUInt32(UInt32(body.count))
        writer.writeUInt32(CRC32C.checksum(body))
        writer.writeBytes(body)
        return writer.bytes
    }

    @Test func roundTrip() {
        let encoded = RecordFormat.encode(Self.records)
        let (decoded, scan) = Self.scan(encoded)
        #expect(decoded == Self.records)
        #expect(scan == RecordFormat.Scan(validEnd: encoded.count, recordCount: Self.records.count, damage: nil))
    }

    @Test func layoutOfAPut() {
        let encoded = RecordFormat.encode([put("k", "vv")])
        let body: [UInt8] = [1, 1, 0, 0, 0] + bytes("kvv")
        var expected = ByteWriter()
        expected.writeUInt32(UInt32(body.count))
        expected.writeUInt32(CRC32C.checksum(body))
        expected.writeBytes(body)
        #expect(encoded == expected.bytes)
    }

    @Test func everyCutKeepsTheCompleteRecordsBeforeIt() {
        let encoded = RecordFormat.encode(Self.records)
        let boundaries = recordBoundaries(Self.records, base: 0)
        for cut in 0...encoded.count {
            let complete = boundaries.filter { $0.upperBound <= cut }.count
            let (decoded, scan) = Self.scan(Array(encoded[..<cut]))
            #expect(decoded == Array(Self.records.prefix(complete)), "cut at \(cut)")
            let atBoundary = cut == (complete == 0 ? 0 : boundaries[complete - 1].upperBound)
            #expect(scan.damage == (atBoundary ? nil : .torn), "cut at \(cut)")
            #expect(scan.validEnd == (complete == 0 ? 0 : boundaries[complete - 1].upperBound))
        }
    }

    @Test func everyBitFlipDropsItsRecordAndAllAfterIt() {
        let encoded = RecordFormat.encode(Self.records)
        let boundaries = recordBoundaries(Self.records, base: 0)
        for byte in encoded.indices {
            let damaged = boundaries.firstIndex { $0.contains(byte) }!
            for bit in 0..<8 {
                var corrupted = encoded
                corrupted[byte] ^= 1 << bit
                let (decoded, scan) = Self.scan(corrupted)
                #expect(decoded == Array(Self.records.prefix(damaged)), "bit \(bit) of byte \(byte)")
                #expect(scan.validEnd == boundaries[damaged].lowerBound, "bit \(bit) of byte \(byte)")
                #expect(scan.damage != nil)
            }
        }
    }

    @Test func invalidLengthsAreRejectedWithoutReadingOn() {
        let good = RecordFormat.encode([put("a", "1")])
        for length: UInt32 in [0, UInt32(RecordFormat.maxRecordLength) + 1, 0x7FFF_FFFF, 0xFFFF_FFFF] {
            var writer = ByteWriter()
            writer.writeUInt32(length)
            writer.writeUInt32(0)
            writer.writeBytes([1, 2, 3, 4, 5])
            let (decoded, scan) = Self.scan(good + writer.bytes)
            #expect(decoded == [put("a", "1")])
            #expect(scan.damage == .invalidLength(length))
            #expect(scan.validEnd == good.count)
        }
        // Within the bound but longer than what is there: torn, not a 16 MiB allocation.
        var writer = ByteWriter()
        writer.writeUInt32(UInt32(RecordFormat.maxRecordLength))
        writer.writeUInt32(0)
        writer.writeBytes([1, 2, 3])
        #expect(Self.scan(writer.bytes).scan.damage == .torn)
    }

    @Test func checksummedNonsenseIsMalformed() {
        let cases: [[UInt8]] = [
            Self.frame(type: 9, payload: bytes("key")),            // unknown type
            Self.frame(type: 1, payload: [3, 0, 0]),               // put without a whole key length
            Self.frame(type: 1, payload: [9, 0, 0, 0] + bytes("key")),  // key longer than the payload
            Self.frame(type: 1, payload: [4, 0, 0, 0] + bytes("key")),  // by one byte
            Self.frame(type: 1, payload: [0xFF, 0xFF, 0xFF, 0xFF]),
        ]
        for bytes in cases {
            let (decoded, scan) = Self.scan(RecordFormat.encode([put("a", "1")]) + bytes)
            #expect(decoded == [put("a", "1")])
            #expect(scan.damage == .malformed)
        }
        #expect(Self.scan(Self.frame(type: 1, payload: [3, 0, 0, 0] + bytes("keyvalue"))).records == [put("key", "value")])
        #expect(Self.scan(Self.frame(type: 1, payload: [3, 0, 0, 0] + bytes("key"))).records == [put("key", "")])
    }

    @Test func randomGarbageNeverCrashesAndValidPrefixSurvives() {
        let seed = SeededRandom.seed(for: "randomGarbage")
        var generator = SeededRandom(seed: seed)
        let valid = RecordFormat.encode(Self.records)
        for round in 0..<2_000 {
            let length = Int.random(in: 0...64, using: &generator)
            let garbage = generator.bytes(length)
            let (decoded, scan) = Self.scan(garbage)
            #expect(scan.validEnd <= garbage.count, "seed \(seed) round \(round)")
            #expect(decoded.count == scan.recordCount)
            let (afterValid, _) = Self.scan(valid + garbage)
            #expect(Array(afterValid.prefix(Self.records.count)) == Self.records, "seed \(seed) round \(round)")
        }
    }

    /// The count made before a replay, to reserve room: every record, and never fewer than a
    /// scan replays, whatever follows the last good record.
    @Test func frameCountIsAnUpperBoundOfWhatAScanReplays() {
        let encoded = RecordFormat.encode(Self.records)
        #expect(RecordFormat.frameCount(encoded, from: 0) == Self.records.count)
        #expect(RecordFormat.frameCount(encoded + [1, 2, 3], from: 0) == Self.records.count)
        var flipped = encoded
        flipped[encoded.count - 1] ^= 1
        #expect(RecordFormat.frameCount(flipped, from: 0) >= Self.scan(flipped).scan.recordCount)
        for cut in 0...encoded.count {
            let prefix = Array(encoded[..<cut])
            #expect(RecordFormat.frameCount(prefix, from: 0) >= Self.scan(prefix).scan.recordCount)
        }
        #expect(RecordFormat.frameCount([], from: 0) == 0 && RecordFormat.frameCount([1], from: 8) == 0)
    }

    @Test func fileHeaders() throws {
        let header = FileHeader.encode(.log, generation: 0x1122_3344_5566_7788)
        #expect(header.count == FileHeader.size)
        #expect(try FileHeader.generation(of: .log, in: header + [1, 2, 3]) == 0x1122_3344_5566_7788)
        #expect(throws: FileHeader.Problem.wrongMagic) { try FileHeader.generation(of: .snapshot, in: header) }
        #expect(throws: FileHeader.Problem.tooShort(23)) { try FileHeader.generation(of: .log, in: Array(header[..<23])) }
        var flipped = header
        flipped[15] ^= 0x10
        #expect(throws: FileHeader.Problem.checksumMismatch) { try FileHeader.generation(of: .log, in: flipped) }
        var future = ByteWriter()
        future.writeBytes(bytes("NIMBJLOG"))
        future.writeUInt32(2)
        future.writeUInt64(1)
        future.writeUInt32(CRC32C.checksum(future.bytes))
        #expect(throws: FileHeader.Problem.unsupportedVersion(2)) { try FileHeader.generation(of: .log, in: future.bytes) }
    }
}
