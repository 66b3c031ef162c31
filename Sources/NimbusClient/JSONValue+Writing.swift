import FoundationEssentials
import NimbusProtocol

extension JSONValue {
    func write(into text: inout [UInt8]) {
        switch self {
        case .null: text += "null".utf8
        case .bool(let value): text += (value ? "true" : "false").utf8
        case .integer(let value): text += String(value).utf8
        case .number(let value):
            // Rare (progress fractions): the encoder's own number format, exactly.
            let encoded = (try? JSONRPC.makeEncoder().encode([value])).map { Array($0.dropFirst().dropLast()) }
            text += encoded ?? Array("null".utf8)
        case .string(let value): Self.write(string: value, into: &text)
        case .array(let items):
            text.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { text.append(UInt8(ascii: ",")) }
                item.write(into: &text)
            }
            text.append(UInt8(ascii: "]"))
        case .object(let members):
            text.append(UInt8(ascii: "{"))
            // Sorted by UTF-8 bytes, as the encoder's .sortedKeys does.
            for (index, key) in members.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
                if index > 0 { text.append(UInt8(ascii: ",")) }
                Self.write(string: key, into: &text)
                text.append(UInt8(ascii: ":"))
                members[key]!.write(into: &text)
            }
            text.append(UInt8(ascii: "}"))
        }
    }

    /// Quotes and escapes as the encoder does: `"` and `\\`, the short forms of \b \f \n \r \t,
    /// other control characters as \u00xx; "/" and everything else as they are.
    static func write(string: String, into text: inout [UInt8]) {
        text.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): text += #"\""#.utf8
            case UInt8(ascii: "\\"): text += #"\\"#.utf8
            case 0x08: text += #"\b"#.utf8
            case 0x0C: text += #"\f"#.utf8
            case 0x0A: text += #"\n"#.utf8
            case 0x0D: text += #"\r"#.utf8
            case 0x09: text += #"\t"#.utf8
            case 0..<0x20:
                let digits = Array("0123456789abcdef".utf8)
                text += #"\u00"#.utf8
                text.append(digits[Int(byte >> 4)])
                text.append(digits[Int(byte & 0xF)])
            default: text.append(byte)
            }
        }
        text.append(UInt8(ascii: "\""))
    }
}
