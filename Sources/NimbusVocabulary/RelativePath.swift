/// A validated path inside a sync root: raw bytes, components separated by "/", no empty,
/// "." or ".." component, no NUL, not absolute. The empty path is the root itself.
///
/// It is the one path type the engine, the journal and the protocol pass around, so a
/// hostile path (`../x`, `/etc`, `a//b`) can never be represented past the point it entered.
public struct RelativePath: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let bytes: [UInt8]

    public enum Invalid: Error, Equatable, Sendable, CustomStringConvertible {
        case absolute, parentReference, emptyComponent, nulByte, tooLong
        public var description: String {
            switch self {
            case .absolute: "absolute paths are not allowed; give a path relative to the sync folder"
            case .parentReference: "'..' is not allowed in a path"
            case .emptyComponent: "the path has an empty or '.' component"
            case .nulByte: "the path contains a NUL byte"
            case .tooLong: "the path is longer than 4096 bytes"
            }
        }
    }

    public static let root = RelativePath(unchecked: [])

    /// Validates `bytes`. Leading "./" and trailing "/" are tolerated and removed.
    public init(validating input: [UInt8]) throws {
        // Most input is already in canonical form (paths Nimbus wrote itself, in its journal
        // or on the wire): one pass over it, and its bytes are kept as they are.
        if Self.isCanonical(input) {
            self.bytes = input
            return
        }
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        if input.contains(0) { throw Invalid.nulByte }
        if input.count > 4096 { throw Invalid.tooLong }
        if input.first == slash { throw Invalid.absolute }
        var components: [ArraySlice<UInt8>] = []
        for component in input.split(separator: slash, omittingEmptySubsequences: false) {
            if component.isEmpty || component.elementsEqual([dot]) {
                // Tolerate "./a" and "a/" but not "a//b" or "a/./b".
                let isLeadingDot = components.isEmpty && component.elementsEqual([dot])
                let isTrailing = component.isEmpty && component.endIndex == input.endIndex && !components.isEmpty
                if isLeadingDot || isTrailing || input.isEmpty { continue }
                throw Invalid.emptyComponent
            }
            if component.elementsEqual([dot, dot]) { throw Invalid.parentReference }
            components.append(component)
        }
        self.bytes = Array(components.joined(separator: [slash]))
    }

    public init(validating string: String) throws { try self.init(validating: Array(string.utf8)) }

    /// True when `input` is exactly what `bytes` holds for some path: at most 4096 bytes, no
    /// NUL, components separated by single slashes, none empty, "." or "..", no slash at
    /// either end (the empty path is the root).
    package static func isCanonical(_ input: [UInt8]) -> Bool {
        guard input.count <= 4096 else { return false }
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        return input.withUnsafeBufferPointer { bytes in
            var start = 0
            for index in 0...bytes.count {
                let byte = index < bytes.count ? bytes[index] : slash
                if byte == 0 { return false }
                guard byte == slash else { continue }
                switch index - start {
                case 0: return bytes.isEmpty
                case 1: if bytes[start] == dot { return false }
                case 2: if bytes[start] == dot && bytes[start + 1] == dot { return false }
                default: break
                }
                start = index + 1
            }
            return true
        }
    }

    /// For bytes already known to be valid (built from validated parts).
    package init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    public var isRoot: Bool { bytes.isEmpty }

    public var components: [[UInt8]] {
        bytes.split(separator: UInt8(ascii: "/")).map(Array.init)
    }

    /// The last component (empty for the root).
    public var name: [UInt8] {
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return bytes }
        return Array(bytes[(slash + 1)...])
    }

    /// The containing directory; the root's parent is the root.
    public var parent: RelativePath {
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return .root }
        return RelativePath(unchecked: Array(bytes[..<slash]))
    }

    /// `self/name` where `name` is one component (no "/", not "." or "..", not empty).
    public func appending(name: [UInt8]) throws -> RelativePath {
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        if name.isEmpty || name.contains(slash) || name == [dot] { throw Invalid.emptyComponent }
        if name == [dot, dot] { throw Invalid.parentReference }
        if name.contains(0) { throw Invalid.nulByte }
        return RelativePath(unchecked: bytes.isEmpty ? name : bytes + [slash] + name)
    }

    public func appending(_ other: RelativePath) -> RelativePath {
        if other.isRoot { return self }
        if isRoot { return other }
        return RelativePath(unchecked: bytes + [UInt8(ascii: "/")] + other.bytes)
    }

    /// True when `self` is `other` or a directory above it.
    public func contains(_ other: RelativePath) -> Bool {
        if isRoot { return true }
        guard other.bytes.count >= bytes.count, other.bytes.starts(with: bytes) else { return false }
        return other.bytes.count == bytes.count || other.bytes[bytes.count] == UInt8(ascii: "/")
    }

    /// `other` with the prefix `self` removed, when `self` contains it.
    public func relative(_ other: RelativePath) -> RelativePath? {
        guard contains(other) else { return nil }
        if isRoot { return other }
        if other.bytes.count == bytes.count { return .root }
        return RelativePath(unchecked: Array(other.bytes[(bytes.count + 1)...]))
    }

    /// The path with `old` prefix replaced by `new` (for propagating directory renames).
    public func rebased(from old: RelativePath, to new: RelativePath) -> RelativePath? {
        old.relative(self).map { new.appending($0) }
    }

    /// Compares the bytes eight at a time (the synthesized `==` compares them one at a time,
    /// which showed up in profiles of path-keyed dictionaries; `memcmp` would need libc).
    public static func == (a: RelativePath, b: RelativePath) -> Bool {
        a.bytes.count == b.bytes.count && firstDifference(a.bytes, b.bytes) == nil
    }

    /// The first offset below the shorter count where `a` and `b` differ, nil when one starts
    /// with the other. Equal words are skipped eight bytes at a time: paths that share a long
    /// folder prefix (a listing of one folder) compare in a few steps instead of one per byte.
    @inline(__always)
    static func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> Int? {
        a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in
                let common = Swift.min(x.count, y.count)
                var offset = 0
                while offset + 8 <= common
                    && x.loadUnaligned(fromByteOffset: offset, as: UInt64.self) == y.loadUnaligned(fromByteOffset: offset, as: UInt64.self) {
                    offset += 8
                }
                while offset < common {
                    if x[offset] != y[offset] { return offset }
                    offset += 1
                }
                return nil
            }
        }
    }

    /// Hashes the bytes in one go (the synthesized hash feeds them one at a time, which showed
    /// up in profiles of path-keyed dictionaries).
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    public var depth: Int { isRoot ? 0 : bytes.reduce(1) { $1 == UInt8(ascii: "/") ? $0 + 1 : $0 } }

    public var description: String { displayString(bytes) }

    /// Orders parents before their children, and siblings by bytes ("a" < "a/b" < "a.b"): at
    /// the first byte that differs, "/" comes before any other byte; a path comes before
    /// the longer ones it starts. The bytes are compared as `==` does, not one by one through
    /// `zip`: sorting 100 000 paths of one folder took 44.5 s in a debug build on 2 loaded
    /// cores, 1.5 s this way, and a `list` of 3 000 long names timed out under load
    /// (`ControlServerTests.listingsLongerThanOneLineArePaged`).
    public static func < (a: RelativePath, b: RelativePath) -> Bool {
        guard let offset = firstDifference(a.bytes, b.bytes) else { return a.bytes.count < b.bytes.count }
        let slash = UInt8(ascii: "/"), x = a.bytes[offset], y = b.bytes[offset]
        if x == slash { return true }
        if y == slash { return false }
        return x < y
    }
}
