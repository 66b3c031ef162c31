import Foundation
import NimbusVocabulary
import Testing
@testable import NimbusSystem
import NimbusTestSupport

@Suite struct XXHash64Tests {
    @Test func publishedVectors() {
        #expect(XXHash64.hash([]) == 0xEF46_DB37_51D8_E999)
        #expect(XXHash64.hash(Array("a".utf8)) == 0xD24E_C4F1_A98C_6E5B)
        #expect(XXHash64.hash(Array("abc".utf8)) == 0x44BC_2CF5_AD77_0999)
    }

    /// Digests computed independently with the reference implementation (Python `xxhash` 4.1.0:
    /// `xxhash.xxh64(bytes((i * 31 + 7) & 0xFF for i in range(n))).intdigest()`), at lengths
    /// that reach every tail path (8-, 4- and 1-byte steps) and the stripe boundaries.
    @Test(arguments: [
        (1, 0xA96C_7F0C_E858_BBB7), (3, 0x56E6_9576_32A4_87F9), (4, 0xC60D_15B1_E3FF_8F04),
        (5, 0x8088_1585_8624_DD4E), (7, 0xAFBE_FC3D_6C6F_9A8E), (8, 0x3DA5_C7AA_2696_83E0),
        (9, 0x4B17_A9BA_9E21_5C09), (15, 0xAE2A_37EB_9357_CAA7), (16, 0xA19A_D429_B02B_C413),
        (31, 0x4A74_F3A1_A39A_D4A1), (32, 0x8D57_D6A4_671C_C43D), (33, 0x62C9_FD21_ED85_7664),
        (35, 0x85CB_CF9E_0D9C_BECA), (63, 0x5C32_0A0D_2707_057F), (64, 0x7BBA_BBC4_5729_D17E),
        (65, 0xF398_0C34_BAE6_5DC1), (100, 0xEFA0_AD2D_3E70_C151), (1000, 0x9959_4F48_2804_3D35),
        (1 << 20, 0x292C_C494_F5A2_E5EC),
    ] as [(Int, UInt64)])
    func referenceDigests(length: Int, digest: UInt64) {
        #expect(XXHash64.hash(pattern(length)) == digest)
    }

    @Test func text() {
        let text = "Nimbus keeps a local folder and a cloud folder in two-way sync."
        #expect(XXHash64.hash(Array(text.utf8)) == 0x9250_8A1B_DD06_A855)
    }

    /// Any split of the input gives the one-shot digest.
    @Test func streamingMatchesOneShot() {
        var generator = SeededRandom.forTest("XXHash64Tests.streamingMatchesOneShot")
        for _ in 0..<200 {
            let length = Int.random(in: 0...3000, using: &generator)
            let input = randomBytes(length, seed: generator.next())
            var hasher = XXHash64()
            var offset = 0
            while offset < length {
                let chunk = min(length - offset, Int.random(in: 0...70, using: &generator))
                hasher.update(Array(input[offset..<(offset + chunk)]))
                offset += chunk
            }
            #expect(hasher.finalize() == XXHash64.hash(input), "seed \(generator.seed), length \(length)")
        }
    }

    @Test func finalizeLeavesTheHasherUsable() {
        var hasher = XXHash64()
        hasher.update(Array("ab".utf8))
        #expect(hasher.finalize() == XXHash64.hash(Array("ab".utf8)))
        hasher.update(Array("c".utf8))
        #expect(hasher.finalize() == 0x44BC_2CF5_AD77_0999)
    }

    private func pattern(_ length: Int) -> [UInt8] {
        (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    }
}
