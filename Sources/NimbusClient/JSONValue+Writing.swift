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
        case .string(let value): JSONText.appendString(value, to: &text)
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
                JSONText.appendString(key, to: &text)
                text.append(UInt8(ascii: ":"))
                members[key]!.write(into: &text)
            }
            text.append(UInt8(ascii: "}"))
        }
    }
}
