import NimbusVocabulary
import Testing
@testable import NimbusCore

/// Conflict copies of names near NAME_MAX (255 bytes): the copy must be a name the filesystem
/// takes, or the conflict is planned again at once, for ever (seen with the real daemon: a file
/// `a.` + 250 bytes edited on both sides logged about 300 failed tries a second).
struct ConflictNamerTests {
    let namer = ConflictNamer(device: "alpha", wallTime: .origin)
    let label = " (conflict from alpha 1970-01-01 000000)"

    func copy(of name: [UInt8]) throws -> [UInt8] {
        let path = try RelativePath(validating: Array("dir/".utf8) + name)
        let copy = namer.name(for: path) { _ in false }
        #expect(copy.parent == (try RelativePath(validating: "dir")), "the copy of \(path) left its folder: \(copy)")
        return copy.name
    }

    @Test func aShortNameKeepsStemLabelAndExtension() throws {
        #expect(try copy(of: Array("report.pdf".utf8)) == Array(("report" + label + ".pdf").utf8))
    }

    @Test func aLongStemIsShortenedAndTheExtensionKept() throws {
        let name = Array(String(repeating: "s", count: 250).utf8) + Array(".txt".utf8)
        let made = try copy(of: name)
        #expect(made.count == 255, "\(made.count) bytes")
        #expect(made == Array(String(repeating: "s", count: 255 - label.utf8.count - 4).utf8) + Array((label + ".txt").utf8))
    }

    @Test("an extension too long to keep beside the label: the whole name is shortened, never past 255 bytes",
          arguments: [2, 100, 214, 215, 230, 250, 253])
    func aLongExtension(extensionLength: Int) throws {
        let name = Array("a.".utf8) + Array(String(repeating: "x", count: extensionLength).utf8)
        let made = try copy(of: name)
        #expect(made.count <= 255, "the copy of a \(name.count)-byte name has \(made.count) bytes: \(String(decoding: made, as: UTF8.self))")
        #expect(made.starts(with: Array("a".utf8)), "the copy does not start as the name did")
        let text = String(decoding: made, as: UTF8.self)
        #expect(text.contains(label), "the copy \(text) does not say it is a conflict copy")
    }

    @Test("a shortened UTF-8 name stays valid UTF-8: no character is cut in two", arguments: [1, 2, 3])
    func aCutNeverSplitsACharacter(offset: Int) throws {
        // é is 2 bytes, € is 3: the cut falls inside a character at some offset.
        let stem = String(repeating: "x", count: offset) + String(repeating: "é€", count: 50)
        for ext in [".txt", "." + String(repeating: "€", count: 80)] {
            let made = try copy(of: Array((stem + ext).utf8))
            #expect(made.count <= 255)
            #expect(String(validating: made, as: UTF8.self) != nil, "the copy of a UTF-8 name is not UTF-8: \(made)")
        }
    }
}

/// A device name the config takes (64 characters) may be 256 bytes and more: alone it would
/// not fit in a name. Its first 127 bytes go into the label, cut between characters.
struct ConflictNamerDeviceTests {
    @Test func aDeviceNameOf64FourByteCharactersIsShortenedInTheLabel() throws {
        let namer = ConflictNamer(device: String(repeating: "😀", count: 64), wallTime: .origin)
        let copy = namer.name(for: try RelativePath(validating: "report.pdf")) { _ in false }
        #expect(String(validating: copy.name, as: UTF8.self)
                == "report (conflict from " + String(repeating: "😀", count: 31) + " 1970-01-01 000000).pdf")
    }
}
