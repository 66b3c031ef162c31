import Testing
@testable import NimbusJournal

@Suite struct ByteCodingTests {
    /// A journal's buffer that grew for one big commit gives its memory back; a small one
    /// keeps its room for the next records.
    @Test func emptyingReleasesALargeBufferOnly() {
        var small = ByteWriter()
        small.writeLengthPrefixed([UInt8](repeating: 1, count: 100))
        let room = small.bytes.capacity
        small.removeAllReleasingLargeRoom()
        #expect(small.isEmpty && small.bytes.capacity == room)
        var large = ByteWriter()
        large.writeLengthPrefixed([UInt8](repeating: 1, count: 10 << 20))
        var kept = large
        large.removeAllReleasingLargeRoom()
        #expect(large.isEmpty && large.bytes.capacity <= ByteWriter.keptCapacity)
        kept.removeAll()  // The snapshot writer's chunk buffer keeps its room.
        #expect(kept.isEmpty && kept.bytes.capacity >= 10 << 20)
    }

    static let varints: [UInt64] = [0, 1, 127, 128, 255, 300, 16_383, 16_384, 1 << 32, UInt64.max - 1, UInt64.max]

    static func sample() -> ByteWriter {
        var writer = ByteWriter()
        writer.writeUInt8(0xAB)
        writer.writeUInt32(0xDEAD_BEEF)
        writer.writeUInt64(0x0102_0304_0506_0708)
        writer.writeInt64(-1_700_000_000_123_456_789)
        for value in varints { writer.writeVarint(value) }
        writer.writeLengthPrefixed(bytes("path/with/ünïcode"))
        writer.writeLengthPrefixed([])
        writer.writeBytes([0, 0xFF])
        return writer
    }

    /// Reads back exactly what `sample` wrote.
    static func readSample(_ reader: inout ByteReader) throws {
        #expect(try reader.readUInt8() == 0xAB)
        #expect(try reader.readUInt32() == 0xDEAD_BEEF)
        #expect(try reader.readUInt64() == 0x0102_0304_0506_0708)
        #expect(try reader.readInt64() == -1_700_000_000_123_456_789)
        for value in varints { #expect(try reader.readVarint() == value) }
        #expect(try reader.readLengthPrefixed() == bytes("path/with/ünïcode"))
        #expect(try reader.readLengthPrefixed() == [])
        #expect(try reader.readBytes(count: 2) == [0, 0xFF])
    }

    @Test func roundTrip() throws {
        var reader = ByteReader(Self.sample().bytes)
        try Self.readSample(&reader)
        #expect(reader.isAtEnd)
    }

    @Test func littleEndianLayout() {
        var writer = ByteWriter()
        writer.writeUInt32(0x0403_0201)
        writer.writeVarint(300)
        #expect(writer.bytes == [1, 2, 3, 4, 0xAC, 0x02])
    }

    @Test func everyTruncationThrowsInsteadOfTrapping() {
        let full = Self.sample().bytes
        for cut in 0..<full.count {
            var reader = ByteReader(Array(full[..<cut]))
            #expect(throws: ByteReaderError.self, "cut at \(cut)") { try Self.readSample(&reader) }
        }
    }

    @Test func failedReadLeavesThePositionUnchanged() throws {
        var reader = ByteReader([1, 2, 3])
        #expect(try reader.readUInt8() == 1)
        #expect(throws: ByteReaderError.truncated(offset: 1, needed: 4, available: 2)) { try reader.readUInt32() }
        #expect(reader.offset == 1)
        #expect(throws: ByteReaderError.self) { try reader.readBytes(count: -1) }
        #expect(try reader.readBytes(count: 2) == [2, 3])
    }

    @Test func invalidVarints() {
        var tooLong = ByteReader([UInt8](repeating: 0x80, count: 10) + [0])
        #expect(throws: ByteReaderError.invalidVarint(offset: 0)) { try tooLong.readVarint() }
        // Ten bytes whose last carries more than the 64th bit.
        var tooLarge = ByteReader([UInt8](repeating: 0xFF, count: 9) + [0x02])
        #expect(throws: ByteReaderError.invalidVarint(offset: 0)) { try tooLarge.readVarint() }
        var unterminated = ByteReader([0x80, 0x80])
        #expect(throws: ByteReaderError.self) { try unterminated.readVarint() }
        #expect(unterminated.offset == 0)
    }

    @Test func hugeLengthPrefixIsRejectedBeforeAllocating() {
        var writer = ByteWriter()
        writer.writeVarint(UInt64.max)
        writer.writeBytes([1, 2, 3])
        var reader = ByteReader(writer.bytes)
        #expect(throws: ByteReaderError.truncated(offset: 10, needed: Int.max, available: 3)) {
            try reader.readLengthPrefixed()
        }
        #expect(reader.offset == 0)
    }
}
