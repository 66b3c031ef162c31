import NimbusVocabulary
import Testing
@testable import NimbusSystem

@Suite struct RelativePathTests {
    @Test(arguments: ["", "a", "a/b", "d0001/f042", ".hidden/..x/x..", "a/.b/c.", "...", "a/..."])
    func canonicalBytesAreKeptAsTheyAre(_ text: String) throws {
        let bytes = Array(text.utf8)
        #expect(RelativePath.isCanonical(bytes))
        #expect(try RelativePath(validating: bytes).bytes == bytes)
    }

    /// Forms the canonical fast path must leave to the full validation: tolerated ones are
    /// normalized, the others refused, exactly as before it existed.
    @Test func otherFormsAreNormalizedOrRefused() throws {
        #expect(try RelativePath(validating: "./a/b").bytes == Array("a/b".utf8))
        #expect(try RelativePath(validating: "a/b/").bytes == Array("a/b".utf8))
        #expect(try RelativePath(validating: ".").isRoot)
        let refused: [(String, RelativePath.Invalid)] = [
            ("/a", .absolute), ("a//b", .emptyComponent), ("a/./b", .emptyComponent), ("a/.", .emptyComponent),
            ("./", .emptyComponent), ("..", .parentReference), ("a/../b", .parentReference), ("a/..", .parentReference),
        ]
        for (text, error) in refused {
            #expect(!RelativePath.isCanonical(Array(text.utf8)))
            #expect(throws: error, "\(text)") { try RelativePath(validating: text) }
        }
        #expect(throws: RelativePath.Invalid.nulByte) { try RelativePath(validating: [0x61, 0, 0x62]) }
        #expect(throws: RelativePath.Invalid.tooLong) { try RelativePath(validating: [UInt8](repeating: 0x61, count: 4097)) }
        #expect(try RelativePath(validating: [UInt8](repeating: 0x61, count: 4096)).bytes.count == 4096)
    }

    @Test func equalityAndHashFollowTheBytes() throws {
        let a = try RelativePath(validating: "dir/file")
        let b = try RelativePath(validating: Array("dir/".utf8) + Array("file".utf8))
        #expect(a == b && a.hashValue == b.hashValue)
        let other = try RelativePath(validating: "dir/filf"), shorter = try RelativePath(validating: "dir/fil")
        #expect(a != other && a != shorter)
        #expect(RelativePath.root == (try RelativePath(validating: "")))
        #expect(Set([a, b]).count == 1)
    }

    /// `==` compares eight bytes at a time, then the rest one by one: a difference at any
    /// position, in a whole word or in the tail, must be seen.
    @Test func equalityFindsADifferenceAtEveryPosition() throws {
        for length in 1...20 {
            let bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            let path = try RelativePath(validating: bytes)
            #expect(path == (try RelativePath(validating: bytes)))
            for position in 0..<length {
                var changed = bytes
                changed[position] = UInt8(ascii: "b")
                #expect(path != (try RelativePath(validating: changed)), "length \(length), position \(position)")
            }
        }
    }
}
