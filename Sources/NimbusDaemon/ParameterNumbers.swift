import FoundationEssentials
import NimbusProtocol

/// Which parameter holds a number its type cannot take (`1.5` or `-1` where an integer of 0
/// or more is expected, `1e30`): for those JSONDecoder throws only "The given data was not
/// valid JSON", with no coding path, and the client would not learn which parameter it got
/// wrong. Each member holding numbers is set to 0 in turn and the parameters decoded again;
/// the member whose zeroing makes that error go is the one.
enum ParameterNumbers {
    /// "lease: expected an integer of 0 or more, got -1", or nil when no member explains the error.
    static func explainUnrepresentable<P: Decodable & Sendable>(_ type: P.Type, request data: Data, decoder: JSONDecoder) -> String? {
        guard let members = (try? decoder.decode(ParamsOf<[String: Value]>.self, from: data))?.params else { return nil }
        let encoder = JSONEncoder()
        for (name, value) in members.sorted(by: { $0.key < $1.key }) where !value.numbers.isEmpty {
            var zeroed = members
            zeroed[name] = value.zeroed
            guard let line = try? encoder.encode(Wrapped(params: zeroed)) else { continue }
            do {
                _ = try decoder.decode(ParamsOf<P>.self, from: line)
            } catch let error as DecodingError where isUnlocated(error) {
                continue  // Still there: another member holds it.
            } catch {}
            let (path, number) = value.numbers.first { $0.number.rounded() != $0.number || $0.number < 0 || $0.number >= 0x1p63 }
                ?? value.numbers[0]
            let shown = number.rounded() == number && abs(number) < 0x1p53 ? String(Int64(number)) : "\(number)"
            let expected = number.rounded() != number ? "an integer" : number < 0 ? "an integer of 0 or more" : "a smaller integer"
            return "\(name)\(path): expected \(expected), got \(shown)"
        }
        return nil
    }

    /// JSONDecoder's error for a number that does not fit its type: corrupted data, no path.
    static func isUnlocated(_ error: DecodingError) -> Bool {
        if case .dataCorrupted(let context) = error, context.codingPath.isEmpty { return true }
        return false
    }

    private struct Wrapped: Encodable {
        var params: [String: Value]
    }

    /// Any JSON value, numbers read as `Double` (which takes every JSON number).
    enum Value: Codable, Sendable {
        case null, bool(Bool), number(Double), string(String), array([Value]), object([String: Value])

        init(from decoder: any Decoder) throws {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() { self = .null }
            else if let bool = try? single.decode(Bool.self) { self = .bool(bool) }
            else if let number = try? single.decode(Double.self) { self = .number(number) }
            else if let string = try? single.decode(String.self) { self = .string(string) }
            else if let array = try? single.decode([Value].self) { self = .array(array) }
            else { self = .object(try single.decode([String: Value].self)) }
        }

        func encode(to encoder: any Encoder) throws {
            var single = encoder.singleValueContainer()
            switch self {
            case .null: try single.encodeNil()
            case .bool(let bool): try single.encode(bool)
            case .number(let number): try single.encode(number)
            case .string(let string): try single.encode(string)
            case .array(let array): try single.encode(array)
            case .object(let object): try single.encode(object)
            }
        }

        /// The numbers inside, each with where it is ("[0]", ".size"; "" for this value itself).
        var numbers: [(path: String, number: Double)] {
            switch self {
            case .number(let number): [("", number)]
            case .array(let array): array.enumerated().flatMap { index, value in value.numbers.map { ("[\(index)]" + $0.path, $0.number) } }
            case .object(let object): object.sorted { $0.key < $1.key }.flatMap { key, value in value.numbers.map { ("." + key + $0.path, $0.number) } }
            default: []
            }
        }

        /// The same shape with every number 0.
        var zeroed: Value {
            switch self {
            case .number: .number(0)
            case .array(let array): .array(array.map(\.zeroed))
            case .object(let object): .object(object.mapValues(\.zeroed))
            default: self
            }
        }
    }
}
