import FoundationEssentials
import NimbusVocabulary

/// A path as it travels on the wire (PROTOCOL.md, "Paths"): relative to the local folder,
/// in a JSON string field (`path`, `to`, `conflictCopy`, …).
///
/// Linux names are bytes and need not be UTF-8, which a JSON string cannot carry. The rule:
/// - a path whose bytes are valid UTF-8 is sent as that string, unchanged, and nothing else;
/// - any other path is sent as a readable text in the string field (valid UTF-8 parts as
///   they are, every other byte as `\xNN`) *and* its exact bytes, base64, in a sibling field
///   named after it plus `Bytes` (`pathBytes`, `toBytes`, `conflictCopyBytes`, …).
/// A receiver that finds a `…Bytes` field uses it and ignores the text, so every name round
/// trips; requests may send the `…Bytes` field alone. The text of a non-UTF-8 name is for
/// people only: `a\xFF` may also be the real name of a valid UTF-8 file.
public struct WirePath: Hashable, Sendable, CustomStringConvertible {
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }
    public init(_ path: RelativePath) { self.bytes = path.bytes }
    public init(_ text: String) { self.bytes = Array(text.utf8) }

    /// The two wire fields read back: the base64 bytes win over the text.
    public init(text: String?, base64: String?) throws(WirePathError) {
        if let base64 {
            guard let data = Data(base64Encoded: base64) else { throw .badBase64(base64) }
            self.bytes = [UInt8](data)
        } else if let text {
            self.bytes = Array(text.utf8)
        } else {
            throw .missing
        }
    }

    /// The string field: the path itself when it is UTF-8, else readable text with `\xNN`.
    public var text: String { fields.text }

    /// The `…Bytes` field: nil when the path is valid UTF-8 (the text is then exact).
    public var base64: String? { fields.base64 }

    /// Both fields, checking the UTF-8 once.
    public var fields: (text: String, base64: String?) {
        if let text = String(validating: bytes, as: UTF8.self) { return (text, nil) }
        return (displayString(bytes), Data(bytes).base64EncodedString())
    }

    public var description: String { text }

    /// The path checked lexically: not absolute, no `..`, no NUL, no empty component.
    /// (Symlinks on the way are the daemon's check: it needs the disk.)
    public func relativePath() throws(WirePathError) -> RelativePath {
        do {
            return try RelativePath(validating: bytes)
        } catch let invalid as RelativePath.Invalid {
            throw .invalid(invalid)
        } catch {
            throw .invalid(.emptyComponent)
        }
    }
}

public enum WirePathError: Error, Equatable, Sendable, CustomStringConvertible {
    case missing
    case badBase64(String)
    case invalid(RelativePath.Invalid)

    public var description: String {
        switch self {
        case .missing: "the path is missing"
        case .badBase64: "the …Bytes field is not valid base64"
        case .invalid(let reason): reason.description
        }
    }
}

/// A time on the wire: an RFC 3339 string in UTC with nanoseconds (for people and `date -d`)
/// next to the exact integer nanoseconds since the Unix epoch (for scripts), e.g.
/// `"mtime": "2025-01-31T09:15:02.123456789Z", "mtimeNs": 1738314902123456789`.
public enum WireTime {
    public static func rfc3339(nanoseconds: Int64) -> String {
        CivilTime(WallInstant(nanoseconds: nanoseconds)).rfc3339()
    }
}
