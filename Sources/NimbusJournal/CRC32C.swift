/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum that frames every
/// journal record. Castagnoli detects more error patterns than the zlib CRC-32 at the same
/// cost, and is what ext4, Btrfs and iSCSI use for metadata.
///
/// Table-driven "slicing-by-8": eight bytes per step through eight 256-entry tables, so
/// recovery of a 100 000-entry journal spends milliseconds, not tenths of seconds, here.
enum CRC32C {
    /// Checksum of `bytes`. Pass a previous result as `continuing` to checksum data that
    /// arrives in pieces: `checksum(b, continuing: checksum(a)) == checksum(a + b)`.
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
        var crc = ~previous
        let count = bytes.count
        var index = 0
        tables.withUnsafeBufferPointer { table in
            while count - index >= 8 {
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                    ^ UInt64(crc)
                // Byte k of the word goes through table 7 - k: its remainder still has to
                // pass 7 - k more byte positions before the end of the step.
                crc = table[7 &* 256 &+ Int(word & 0xFF)]
                    ^ table[6 &* 256 &+ Int((word &>> 8) & 0xFF)]
                    ^ table[5 &* 256 &+ Int((word &>> 16) & 0xFF)]
                    ^ table[4 &* 256 &+ Int((word &>> 24) & 0xFF)]
                    ^ table[3 &* 256 &+ Int((word &>> 32) & 0xFF)]
                    ^ table[2 &* 256 &+ Int((word &>> 40) & 0xFF)]
                    ^ table[1 &* 256 &+ Int((word &>> 48) & 0xFF)]
                    ^ table[Int(word &>> 56)]
                index &+= 8
            }
            while index < count {
                crc = table[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc &>> 8)
                index &+= 1
            }
        }
        return ~crc
    }

    static func checksum(_ bytes: [UInt8], continuing previous: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, continuing: previous) }
    }

    /// Table k maps a byte to its CRC contribution after k further zero bytes; table 0 is
    /// the classic byte-at-a-time table. Flattened: entry i of table k is at k * 256 + i.
    private static let tables: [UInt32] = {
        let polynomial: UInt32 = 0x82F6_3B78
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ polynomial : crc >> 1 }
            tables[byte] = crc
        }
        for k in 1..<8 {
            for byte in 0..<256 {
                let previous = tables[(k - 1) * 256 + byte]
                tables[k * 256 + byte] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()
}
