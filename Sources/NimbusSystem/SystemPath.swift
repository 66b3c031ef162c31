import NimbusVocabulary

/// A path on the host as raw bytes: Linux file names need not be UTF-8, and Nimbus must
/// carry such names through unchanged. May be absolute or relative; never contains NUL.
public struct SystemPath: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) {
        precondition(!bytes.contains(0), "a path cannot contain NUL")
        self.bytes = bytes
    }

    public init(_ string: String) { self.init(bytes: Array(string.utf8)) }
    public init(stringLiteral value: String) { self.init(value) }

    public var isAbsolute: Bool { bytes.first == UInt8(ascii: "/") }

    /// `self/other`, or `other` alone when it is absolute.
    public func appending(_ other: SystemPath) -> SystemPath {
        if other.isAbsolute || bytes.isEmpty { return other }
        if other.bytes.isEmpty { return self }
        var result = bytes
        if result.last != UInt8(ascii: "/") { result.append(UInt8(ascii: "/")) }
        result += other.bytes
        return SystemPath(bytes: result)
    }

    public func appending(_ relative: RelativePath) -> SystemPath { appending(SystemPath(bytes: relative.bytes)) }

    /// The last component, and everything before it ("" when there is no slash).
    public var lastComponent: [UInt8] {
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return bytes }
        return Array(bytes[(slash + 1)...])
    }

    public var parent: SystemPath {
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return SystemPath(bytes: []) }
        return slash == 0 ? SystemPath("/") : SystemPath(bytes: Array(bytes[..<slash]))
    }

    public var description: String { displayString(bytes) }

    public static func < (a: SystemPath, b: SystemPath) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}
