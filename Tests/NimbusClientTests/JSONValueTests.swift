import FoundationEssentials
import NimbusProtocol
import NimbusSimulation
import Testing
@testable import NimbusClient
import NimbusTestSupport

/// The hand-written JSON reader and writer behind `nimbusctl --json`: what they write is byte
/// for byte what the protocol's JSONEncoder writes, and what they read is what it means.
@Suite struct JSONValueTests {
    static let alphabet: [Unicode.Scalar] = ["a", "Z", "0", " ", "/", "\"", "\\", "\u{0}", "\u{1}", "\u{8}", "\u{9}", "\u{a}",
                                             "\u{c}", "\u{d}", "\u{1f}", "\u{7f}", "é", "\u{2028}", "😀", "語", "\u{fffd}"]

    static func string(_ random: inout SeededRandom) -> String {
        var text = ""
        for _ in 0..<Int.random(in: 0...8, using: &random) {
            text.unicodeScalars.append(alphabet.randomElement(using: &random)!)
        }
        return text
    }

    static func value(_ random: inout SeededRandom, depth: Int = 0) -> JSONValue {
        switch Int.random(in: 0...(depth > 3 ? 4 : 6), using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .integer([Int64.min, Int64.max, 0, -1, Int64.random(in: -1_000_000...1_000_000, using: &random)]
            .randomElement(using: &random)!)
        case 3: return .string(string(&random))
        case 4: return .number([0.5, 0.25, 1.5e-7, 123456789.125, 0.1, Double.random(in: -1...1, using: &random)]
            .randomElement(using: &random)!)
        case 5: return .array((0..<Int.random(in: 0...4, using: &random)).map { _ in value(&random, depth: depth + 1) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &random) { members[string(&random)] = value(&random, depth: depth + 1) }
            return .object(members)
        }
    }

    @Test func writesWhatTheEncoderWritesAndReadsItBack() throws {
        var random = SeededRandom.forTest("JSONValueTests")
        for _ in 0..<2_000 {
            let value = Self.value(&random)
            let encoded = String(decoding: try JSONRPC.makeEncoder().encode(value), as: UTF8.self)
            #expect(value.jsonText == encoded, "seed \(random.seed)")
            #expect(try JSONValue(parsing: Array(encoded.utf8)) == value, "seed \(random.seed): \(encoded)")
        }
    }

    @Test func readsEscapesNumbersAndSpaceAsJSONMeansThem() throws {
        #expect(try JSONValue(parsing: Array(#" { "a" : [1, -2, 0.5, 1e3, true, false, null, "\u00e9\ud83d\ude00\/\n"] } "#.utf8))
                == .object(["a": .array([.integer(1), .integer(-2), .number(0.5), .number(1000), .bool(true), .bool(false),
                                         .null, .string("é😀/\n")])]))
        #expect(try JSONValue(parsing: Array("9223372036854775807".utf8)) == .integer(.max))
        #expect(try JSONValue(parsing: Array("9223372036854775808".utf8)) == .number(9223372036854775808))
    }

    @Test(arguments: ["", " ", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "[1 2]", "01", "1.", ".5", "+1", "-", "1e", "0x10",
                      "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00x\"", "\"a\u{1}b\"", "tru", "nul", "[1] x",
                      "1e400", "NaN", "\"\u{FF}\""])
    func refusesWhatIsNotJSON(_ text: String) {
        let bytes = text == "\"\u{FF}\"" ? [0x22, 0xFF, 0x22] : Array(text.utf8)
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: bytes) }
    }

    @Test func refusesNestingDeepEnoughToExhaustTheStack() {
        let deep = Array(String(repeating: "[", count: 100_000).utf8)
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: deep) }
        let fine = Array((String(repeating: "[", count: 100) + String(repeating: "]", count: 100)).utf8)
        #expect((try? JSONValue(parsing: fine)) != nil)
    }
}
