import Glibc
import NimbusVocabulary
import Testing
@testable import NimbusCore
import NimbusTestSupport

/// `**` in anchored patterns: a line with many of them over a deep path answers at once, and
/// every answer is the one a plain recursive matcher gives.
@Suite struct IgnoreGlobstarTests {
    /// Seen with the real daemon: this line in .nimbusignore and one file 150 folders deep
    /// kept the first pass 'Syncing' for minutes, the engine thread busy in the matcher
    /// (it tried every way of sharing the folders among the `**`, each again for every
    /// folder above the file). The suite's time limit stands for "at once".
    @Test(.timeLimit(.minutes(1)))
    func manyGlobstarsOverADeepPathAnswerAtOnce() {
        let deep = ignorePath(String(repeating: "a/", count: 400) + "b")
        let missing = IgnoreRules(parsing: Array("**/a/**/a/**/a/**/a/**/c/**/b\n".utf8), defaults: false)
        #expect(!missing.isIgnored(deep, isDirectory: false))
        let present = IgnoreRules(parsing: Array("**/a/**/a/**/a/**/a/**/a/**/b\n".utf8), defaults: false)
        #expect(present.isIgnored(deep, isDirectory: false))
        let inside = IgnoreRules(parsing: Array("/a/**/a/**/a/**/a/**\n".utf8), defaults: false)
        #expect(inside.isIgnored(deep, isDirectory: false))
    }

    /// Random anchored patterns of names, `*`-globs and `**` against random paths, compared
    /// with a reference that tries every way (fnmatch for one component).
    @Test func globstarsMatchAsTheReferenceDoes() throws {
        let seed = SeededRandom.seed(for: "IgnoreGlobstarTests")
        var random = SeededRandom(seed: seed)
        let pieces = ["a", "b", "*", "a*", "*b", "**"], names = ["a", "b", "ab", "ba", "c"]
        for _ in 0..<3_000 {
            let pattern = (0..<Int.random(in: 1...6, using: &random)).map { _ in pieces.randomElement(using: &random)! }
            let path = (0..<Int.random(in: 1...8, using: &random)).map { _ in names.randomElement(using: &random)! }
            let line = "/" + pattern.joined(separator: "/")
            let compiled = try IgnorePattern(compiling: ArraySlice(line.utf8))
            let bytes = Array(path.joined(separator: "/").utf8)
            let got = compiled.matches(bytes.span, depth: path.count,
                                       nameStart: bytes.count - path.last!.utf8.count, isDirectory: false)
            let expected = Self.reference(pattern[...], path[...])
            #expect(got == expected, "seed \(seed): \(line) against \(path.joined(separator: "/")): \(got), expected \(expected)")
            if got != expected { return }
        }
    }

    /// gitignore's `**`: in the middle or at the start, zero or more folders; at the end,
    /// everything inside (one or more components).
    static func reference(_ pattern: ArraySlice<String>, _ path: ArraySlice<String>) -> Bool {
        guard let first = pattern.first else { return path.isEmpty }
        if first == "**" {
            let rest = pattern.dropFirst()
            if rest.isEmpty { return !path.isEmpty }
            return (0...path.count).contains { reference(rest, path.dropFirst($0)) }
        }
        guard let component = path.first, fnmatch(first, component, 0) == 0 else { return false }
        return reference(pattern.dropFirst(), path.dropFirst())
    }
}
