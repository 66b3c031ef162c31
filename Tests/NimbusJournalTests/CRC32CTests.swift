import Testing
@testable import NimbusJournal
import NimbusTestSupport

@Suite struct CRC32CTests {
    /// Bit-at-a-time CRC-32C straight from the definition, to check the sliced tables against.
    static func reference(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        }
        return ~crc
    }

    @Test func knownVectors() {
        #expect(CRC32C.checksum(bytes("123456789")) == 0xE306_9283)
        #expect(CRC32C.checksum([]) == 0)
        // RFC 3720 (iSCSI), appendix B.4.
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
        #expect(CRC32C.checksum((0..<32).reversed().map { UInt8($0) }) == 0x113F_DB5C)
    }

    @Test func matchesTheDefinitionForEveryLengthAndAlignment() {
        var generator = SeededRandom(seed: 42)
        let data = generator.bytes(300)
        for start in 0..<9 {
            for end in start...data.count {
                let slice = Array(data[start..<end])
                #expect(CRC32C.checksum(slice) == Self.reference(slice), "bytes \(start)..<\(end)")
            }
        }
    }

    @Test func continuingEqualsOneShotAtEverySplit() {
        let data = Array("The quick brown fox jumps over the lazy dog, twice over.".utf8)
        let whole = CRC32C.checksum(data)
        for split in 0...data.count {
            let first = CRC32C.checksum(Array(data[..<split]))
            #expect(CRC32C.checksum(Array(data[split...]), continuing: first) == whole, "split at \(split)")
        }
    }
}
