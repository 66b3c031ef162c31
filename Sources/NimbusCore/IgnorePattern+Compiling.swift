// Compiling: one line of glob syntax into the matchers, with a clear problem when it cannot be used.

extension IgnorePattern {
    /// Why a line cannot be used; the rules report it with its line number and skip it.
    struct Problem: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    /// Compiles one pattern as git reads it: `line` is not a comment and has no line ending
    /// and no unescaped trailing spaces.
    init(compiling line: ArraySlice<UInt8>) throws(Problem) {
        let slash = UInt8(ascii: "/")
        var body = line
        isNegated = body.first == UInt8(ascii: "!")
        if isNegated { body = body.dropFirst() }
        directoryOnly = body.last == slash
        if directoryOnly { body = body.dropLast() }
        // A slash at the start or in the middle anchors the pattern to the root; the leading
        // one says only that and is not part of what is matched.
        let anchored = body.contains(slash)
        if anchored && body.first == slash { body = body.dropFirst() }
        guard !body.isEmpty else { throw Problem("the pattern is empty, so it would match nothing") }
        var parser = GlobParser(body)
        let components = try parser.components()
        guard anchored else {
            target = .name(NameMatcher(components[0].tokens))
            depths = 1...Int.max
            return
        }
        let segments = try Self.segments(components)
        if segments.count == 2, case .anyDirectories = segments[0], case .name(let matcher) = segments[1] {
            // `**/name` is `name`: take the fast path.
            target = .name(matcher)
            depths = 1...Int.max
            return
        }
        target = .path(segments)
        var fewest = 0, unbounded = false
        for segment in segments {
            switch segment {
            case .name: fewest += 1
            case .anyDirectories: unbounded = true
            case .anyDescendants: fewest += 1; unbounded = true
            }
        }
        depths = fewest...(unbounded ? Int.max : fewest)
    }

    private static func segments(_ components: [GlobParser.Component]) throws(Problem) -> [Segment] {
        var segments: [Segment] = []
        for (offset, component) in components.enumerated() {
            guard !component.tokens.isEmpty else {
                throw Problem("it has an empty path component (\"//\"), so no path can match it")
            }
            guard component.isGlobstar else {
                segments.append(.name(NameMatcher(component.tokens)))
                continue
            }
            // "**/**" means the same as "**"; merging keeps the backtracking to one level.
            if case .anyDirectories? = segments.last { segments.removeLast() }
            segments.append(offset == components.count - 1 ? .anyDescendants : .anyDirectories)
        }
        return segments
    }
}

/// Reads the glob syntax of one pattern into tokens, one array per "/"-separated component.
private struct GlobParser {
    struct Component {
        var tokens: [IgnorePattern.Token] = []
        /// The component is only stars, two or more: git's `**`, which may cross directories.
        var isGlobstar = false
    }

    private let bytes: ArraySlice<UInt8>
    private var index: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.index = bytes.startIndex
    }

    private static let unterminated = IgnorePattern.Problem(
        "unterminated character class \"[\": git never matches such a pattern (write \"\\[\" for a literal bracket)")

    mutating func components() throws(IgnorePattern.Problem) -> [Component] {
        var components: [Component] = []
        var current = Component()
        while index < bytes.endIndex {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "/"):
                components.append(current)
                current = Component()
            case UInt8(ascii: "\\"):
                guard index < bytes.endIndex else {
                    throw IgnorePattern.Problem("it ends with a lone backslash, which escapes nothing (git never matches it)")
                }
                let escaped = bytes[index]
                index += 1
                // "\/" matches a "/" like "/" does, so it also separates components.
                if escaped == UInt8(ascii: "/") {
                    components.append(current)
                    current = Component()
                } else {
                    current.tokens.append(.byte(escaped))
                }
            case UInt8(ascii: "?"):
                current.tokens.append(.anyByte)
            case UInt8(ascii: "["):
                current.tokens.append(.set(try bracketClass()))
            case UInt8(ascii: "*"):
                var run = 1
                while index < bytes.endIndex, bytes[index] == UInt8(ascii: "*") { run += 1; index += 1 }
                // `**` is special only as a whole component; elsewhere it is a plain `*`.
                let atComponentEnd = index == bytes.endIndex || bytes[index] == UInt8(ascii: "/")
                    || (bytes[index] == UInt8(ascii: "\\") && index + 1 < bytes.endIndex
                        && bytes[index + 1] == UInt8(ascii: "/"))
                current.isGlobstar = run >= 2 && current.tokens.isEmpty && atComponentEnd
                if current.tokens.last != .star { current.tokens.append(.star) }
            default:
                current.tokens.append(.byte(byte))
            }
        }
        components.append(current)
        return components
    }

    /// Reads a class after its "[": members, `a-z` ranges, `\x` escapes, `[:alpha:]` names,
    /// `!` or `^` to invert; a "]" right after the opening is a member. As in git, a class
    /// never matches "/".
    private mutating func bracketClass() throws(IgnorePattern.Problem) -> IgnorePattern.ByteSet {
        var set = IgnorePattern.ByteSet()
        let inverted = index < bytes.endIndex
            && (bytes[index] == UInt8(ascii: "!") || bytes[index] == UInt8(ascii: "^"))
        if inverted { index += 1 }
        // The last single member read: the low end of a range if a "-" follows.
        var previous: UInt8? = nil
        var isFirst = true
        while true {
            guard index < bytes.endIndex else { throw Self.unterminated }
            let byte = bytes[index]
            if byte == UInt8(ascii: "]") && !isFirst { index += 1; break }
            isFirst = false
            if byte == UInt8(ascii: "\\") {
                guard index + 1 < bytes.endIndex else { throw Self.unterminated }
                previous = bytes[index + 1]
                set.insert(bytes[index + 1])
                index += 2
            } else if byte == UInt8(ascii: "-"), let low = previous,
                      index + 1 < bytes.endIndex, bytes[index + 1] != UInt8(ascii: "]") {
                var high = bytes[index + 1]
                index += 2
                if high == UInt8(ascii: "\\") {
                    guard index < bytes.endIndex else { throw Self.unterminated }
                    high = bytes[index]
                    index += 1
                }
                if low <= high { set.insert(low...high) }
                previous = nil
            } else if byte == UInt8(ascii: "["), index + 1 < bytes.endIndex, bytes[index + 1] == UInt8(ascii: ":") {
                let nameStart = index + 2
                guard let close = bytes[nameStart...].firstIndex(of: UInt8(ascii: "]")) else {
                    throw Self.unterminated
                }
                if close > nameStart && bytes[close - 1] == UInt8(ascii: ":") {
                    let name = bytes[nameStart..<(close - 1)]
                    guard let predicate = Self.namedClasses[String(decoding: name, as: UTF8.self)] else {
                        throw IgnorePattern.Problem(
                            "unknown character class \"[:\(String(decoding: name, as: UTF8.self)):]\" (git never matches such a pattern)")
                    }
                    set.insert(where: predicate)
                    previous = nil
                    index = close + 1
                } else {
                    // No ":]" before the next "]": the "[" is an ordinary member.
                    set.insert(byte)
                    previous = byte
                    index += 1
                }
            } else {
                set.insert(byte)
                previous = byte
                index += 1
            }
        }
        if inverted { set.invert() }
        set.remove(UInt8(ascii: "/"))
        return set
    }

    /// POSIX classes in the C locale: ASCII only, so bytes of other encodings never belong.
    private static let namedClasses: [String: @Sendable (UInt8) -> Bool] = [
        "alnum": { isAlpha($0) || isDigit($0) },
        "alpha": isAlpha,
        "blank": { $0 == 0x20 || $0 == 0x09 },
        "cntrl": { $0 < 0x20 || $0 == 0x7F },
        "digit": isDigit,
        "graph": { $0 > 0x20 && $0 < 0x7F },
        "lower": { $0 >= 0x61 && $0 <= 0x7A },
        "print": { $0 >= 0x20 && $0 < 0x7F },
        "punct": { $0 > 0x20 && $0 < 0x7F && !isAlpha($0) && !isDigit($0) },
        "space": { $0 == 0x20 || ($0 >= 0x09 && $0 <= 0x0D) },
        "upper": { $0 >= 0x41 && $0 <= 0x5A },
        "xdigit": { isDigit($0) || (($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x66) },
    ]

    private static func isAlpha(_ byte: UInt8) -> Bool { (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }
    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
}
