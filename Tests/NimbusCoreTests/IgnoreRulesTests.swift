import Foundation
import NimbusVocabulary
import Testing
import NimbusSystem
@testable import NimbusCore
import NimbusTestSupport

func ignorePath(_ bytes: [UInt8]) -> RelativePath { try! RelativePath(validating: bytes) }
func ignorePath(_ text: String) -> RelativePath { try! RelativePath(validating: text) }

@Suite struct IgnoreRulesTests {
    @Test(arguments: syntaxRows)
    func syntax(_ row: IgnoreRow) {
        let rules = IgnoreRules(parsing: Array(row.file.utf8), defaults: false)
        #expect(rules.isIgnored(ignorePath(row.path), isDirectory: row.isDirectory) == row.ignored)
    }

    @Test func rootIsNeverIgnored() {
        let rules = IgnoreRules(parsing: Array("*\n/**\n".utf8))
        #expect(!rules.isIgnored(.root, isDirectory: true))
    }

    @Test func nonUTF8NamesAndPatterns() {
        let latin1Name: [UInt8] = [0x63, 0x61, 0x66, 0xE9]  // "café" in Latin-1
        let lines: [[UInt8]] = [
            [0xFF, UInt8(ascii: "*")],
            Array("[".utf8) + [0x80, UInt8(ascii: "-"), 0xFF] + Array("]x".utf8),
            Array("*.txt".utf8),
            Array("sub/".utf8) + latin1Name,
        ]
        let file = Array(lines.joined(separator: [0x0A]))
        let rules = IgnoreRules(parsing: file, defaults: false)
        #expect(rules.problems.isEmpty)
        #expect(rules.isIgnored(ignorePath([0xFF, 0x61]), isDirectory: false))
        #expect(rules.isIgnored(ignorePath(Array("a/b/".utf8) + [0xFF]), isDirectory: false))
        #expect(!rules.isIgnored(ignorePath([0xFE, 0x61]), isDirectory: false))
        #expect(rules.isIgnored(ignorePath([0xE9, 0x78]), isDirectory: false))
        #expect(!rules.isIgnored(ignorePath([0x7F, 0x78]), isDirectory: false))
        #expect(rules.isIgnored(ignorePath([0xC3, 0x28] + Array(".txt".utf8)), isDirectory: false))
        #expect(rules.isIgnored(ignorePath(Array("sub/".utf8) + latin1Name), isDirectory: false))
        #expect(!rules.isIgnored(ignorePath(latin1Name), isDirectory: false))
        // Inside an ignored directory with an invalid name.
        #expect(rules.isIgnored(ignorePath([0xFF, 0x2F, 0x61]), isDirectory: false))

        let single = IgnoreRules(parsing: Array("?\n[[:alpha:]]b\n".utf8), defaults: false)
        #expect(single.isIgnored(ignorePath([0xFF]), isDirectory: false))
        #expect(!single.isIgnored(ignorePath([0xE9, 0x62]), isDirectory: false))  // C locale: ASCII only
    }

    // MARK: Defaults

    static let defaultIgnored = [
        ".nimbus-tmp-1234", "dir/.nimbus-tmp-x", ".nimbus-root", ".nimbusignore", ".nimbus",
        ".nimbus/versions/a", ".notes.txt.swp", "a/.x.swo", ".x.swx", "notes.txt~", "4913", "d/4913",
        ".#notes.txt", "#notes.txt#", ".~lock.report.odt#", "video.mp4.part", "file.zip.crdownload",
    ]

    @Test(arguments: defaultIgnored)
    func defaultsIgnore(_ path: String) {
        #expect(IgnoreRules(parsing: []).isIgnored(ignorePath(path), isDirectory: false))
        #expect(IgnoreRules(parsing: []).isIgnored(ignorePath(path), isDirectory: true))
        #expect(!IgnoreRules(parsing: [], defaults: false).isIgnored(ignorePath(path), isDirectory: false))
    }

    @Test(arguments: [
        "report.pdf.nimbus", "dir/report.pdf.nimbus", "sub/.nimbusignore", "sub/.nimbus-root", "sub/.nimbus",
        "notes.txt", "a#b", "#notes", "x.partial", "49130", "nimbus-tmp-x", ".swp", "a~b",
    ])
    func defaultsKeep(_ path: String) {
        #expect(!IgnoreRules(parsing: []).isIgnored(ignorePath(path), isDirectory: false))
    }

    @Test func editorDefaultsCanBeReincluded() {
        let rules = IgnoreRules(parsing: Array("!*.part\n!4913\n".utf8))
        #expect(!rules.isIgnored(ignorePath("archive.part"), isDirectory: false))
        #expect(!rules.isIgnored(ignorePath("4913"), isDirectory: false))
        #expect(rules.isIgnored(ignorePath("x.crdownload"), isDirectory: false))
    }

    @Test func nimbusOwnFilesCannotBeReincluded() {
        let file = "!.nimbus-root\n!/.nimbusignore\n!.nimbus-tmp-*\n!/.nimbus/\n!/.nimbus/**\n!*\n"
        let rules = IgnoreRules(parsing: Array(file.utf8))
        #expect(rules.problems.isEmpty)
        #expect(rules.isIgnored(ignorePath(".nimbus-root"), isDirectory: false))
        #expect(rules.isIgnored(ignorePath(".nimbusignore"), isDirectory: false))
        #expect(rules.isIgnored(ignorePath("a/.nimbus-tmp-7"), isDirectory: false))
        #expect(rules.isIgnored(ignorePath(".nimbus/versions/x"), isDirectory: false))
    }

    @Test func defaultPatternsAreValidIgnoreLines() {
        let file = IgnoreRules.defaultPatterns.joined(separator: "\n")
        let rules = IgnoreRules(parsing: Array(file.utf8), defaults: false)
        #expect(rules.problems.isEmpty)
        // Written into a file, they mean what the built-in defaults mean.
        for path in Self.defaultIgnored {
            #expect(rules.isIgnored(ignorePath(path), isDirectory: false), "\(path)")
        }
        #expect(IgnoreRules.defaultPatterns.contains(".nimbus-tmp-*"))
        #expect(!IgnoreRules.defaultPatterns.contains { $0.hasSuffix(".nimbus") && $0.hasPrefix("*") })
    }

    // MARK: Problems

    @Test func problemsAreReportedWithLineNumbersAndSkipped() {
        let file = Array("""
            ok
            x[ab
            # comment

            [[:foo:]]
            trail\\
            !
            /
            a//b
            crlf\r
            nul\0byte
            [!
            //
            last
            """.utf8)
        let rules = IgnoreRules(parsing: file, defaults: false)
        #expect(rules.problems.map(\.line) == [2, 5, 6, 7, 8, 9, 11, 12, 13])
        #expect(rules.problems[0].message.contains("x[ab"))
        #expect(rules.problems[0].message.contains("unterminated"))
        #expect(rules.problems[1].message.contains("[:foo:]"))
        #expect(rules.problems[2].message.contains("backslash"))
        #expect(rules.problems[3].message.contains("empty"))
        #expect(rules.problems[5].message.contains("//"))
        #expect(rules.problems[6].message.contains("NUL"))
        // The good lines around them still work.
        for name in ["ok", "crlf", "last"] {
            #expect(rules.isIgnored(ignorePath(name), isDirectory: false), "\(name)")
        }
        #expect(!rules.isIgnored(ignorePath("xa"), isDirectory: false))
        #expect(!rules.isIgnored(ignorePath("a/b"), isDirectory: false))
    }

    @Test func problemMessagesShowInvalidBytesReadably() {
        let rules = IgnoreRules(parsing: [0xFF, 0x5B, 0x61], defaults: false)
        #expect(rules.problems.count == 1)
        #expect(rules.problems.first?.message.contains("\\xFF[a") == true)
    }

    @Test func arbitraryBytesNeverCrash() {
        var random = SeededRandom(seed: 0x1A2B)
        let alphabet: [UInt8] = Array("ab/*?[]!^-:\\ #.\n\r".utf8) + [0x80, 0xFF, 0x00]
        let names: [[UInt8]] = [Array("a".utf8), Array("b".utf8), Array("[a]".utf8), [0xFF], Array("*".utf8), Array("\\".utf8)]
        for _ in 0..<2_000 {
            let file = (0..<Int.random(in: 0..<30, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
            let rules = IgnoreRules(parsing: file, defaults: Bool.random(using: &random))
            for _ in 0..<10 {
                let components = (0..<Int.random(in: 1...4, using: &random)).map { _ in names.randomElement(using: &random)! }
                let path = ignorePath(Array(components.joined(separator: [UInt8(ascii: "/")])))
                _ = rules.isIgnored(path, isDirectory: Bool.random(using: &random))
            }
        }
    }
}
