/// One compiled line of a `.nimbusignore` file (gitignore syntax).
///
/// Compiling turns the text into matchers over raw bytes once, so that `IgnoreRules.isIgnored`
/// — called for every scanned entry — does no parsing, no allocation and no String work.
struct IgnorePattern: Sendable {
    /// `!pattern`: a match re-includes the path.
    var isNegated: Bool
    /// `pattern/`: only directories match.
    var directoryOnly: Bool
    var target: Target
    /// How many components a matching path has: most paths fail an anchored pattern on
    /// this alone, before any byte is compared.
    var depths: ClosedRange<Int>

    enum Target: Sendable {
        /// No slash in the pattern (or `**/name`): matches the last component, at any depth.
        case name(NameMatcher)
        /// A slash at the start or in the middle: matches the whole path from the root.
        case path([Segment])
    }

    /// `path` is a whole relative path of `depth` components; the last starts at `nameStart`.
    func matches(_ path: Span<UInt8>, depth: Int, nameStart: Int, isDirectory: Bool) -> Bool {
        if directoryOnly && !isDirectory { return false }
        guard depths.contains(depth) else { return false }
        switch target {
        case .name(let matcher):
            return matcher.matches(path, from: nameStart, to: path.count)
        case .path(let segments):
            return Segment.match(segments, from: 0, path, at: 0)
        }
    }
}

extension IgnorePattern {
    /// The bytes a matching path can end with (all of them if it ends with a wildcard). The
    /// rules index patterns by this, so most patterns are never tried against a given path.
    var lastBytes: ByteSet {
        switch target {
        case .name(let matcher):
            return matcher.lastBytes
        case .path(let segments):
            if case .name(let matcher)? = segments.last { return matcher.lastBytes }
            return .all
        }
    }
}

// MARK: - Matching

extension IgnorePattern {
    /// One "/"-separated part of an anchored pattern.
    enum Segment: Sendable {
        case name(NameMatcher)
        /// `**` before a "/": zero or more whole directories (`**/x`, `a/**/b`).
        case anyDirectories
        /// `**` at the end (`a/**`): one or more components, i.e. everything inside.
        case anyDescendants

        /// Matches `segments[index...]` against `path[position...]`, where `position` starts a
        /// component. Only `**` backtracks, and only over component boundaries.
        static func match(_ segments: [Segment], from index: Int, _ path: Span<UInt8>, at position: Int) -> Bool {
            switch segments[index] {
            case .anyDescendants:
                return position < path.count
            case .anyDirectories:
                // Never last: compilation turns a trailing `**` into `.anyDescendants`.
                var start = position
                while true {
                    if match(segments, from: index + 1, path, at: start) { return true }
                    guard let slash = nextSlash(path, from: start) else { return false }
                    start = slash + 1
                }
            case .name(let matcher):
                let end = nextSlash(path, from: position) ?? path.count
                guard matcher.matches(path, from: position, to: end) else { return false }
                if index + 1 == segments.count { return end == path.count }
                return end < path.count && match(segments, from: index + 1, path, at: end + 1)
            }
        }

        private static func nextSlash(_ path: Span<UInt8>, from start: Int) -> Int? {
            var index = start
            while index < path.count {
                if path[index] == UInt8(ascii: "/") { return index }
                index += 1
            }
            return nil
        }
    }

    /// Matches one path component (no "/" inside). The common shapes of ignore patterns —
    /// `name`, `*.ext`, `prefix*`, `.*.swp` — get a direct comparison instead of the glob loop.
    enum NameMatcher: Sendable {
        case exact([UInt8])
        case prefix([UInt8])
        case suffix([UInt8])
        case prefixAndSuffix([UInt8], [UInt8])
        case anything
        case glob([Token])

        init(_ tokens: [Token]) {
            let stars = tokens.indices.filter { tokens[$0] == .star }
            let literal = tokens.compactMap { token -> UInt8? in
                if case .byte(let byte) = token { byte } else { nil }
            }
            switch stars.count {
            case 0 where literal.count == tokens.count:
                self = .exact(literal)
            case 1 where literal.count == tokens.count - 1:
                let head = Array(literal[..<stars[0]]), tail = Array(literal[stars[0]...])
                switch (head.isEmpty, tail.isEmpty) {
                case (true, true): self = .anything
                case (true, false): self = .suffix(tail)
                case (false, true): self = .prefix(head)
                case (false, false): self = .prefixAndSuffix(head, tail)
                }
            default:
                self = .glob(tokens)
            }
        }

        var lastBytes: ByteSet {
            let last: Token?
            switch self {
            case .exact(let bytes), .suffix(let bytes), .prefixAndSuffix(_, let bytes): last = bytes.last.map(Token.byte)
            case .prefix, .anything: last = nil
            case .glob(let tokens): last = tokens.last
            }
            switch last {
            case .byte(let byte)?:
                var set = ByteSet()
                set.insert(byte)
                return set
            case .set(let set)?:
                return set
            default:
                return .all
            }
        }

        /// Does `text[start..<end]` (one component) match?
        func matches(_ text: Span<UInt8>, from start: Int, to end: Int) -> Bool {
            let length = end - start
            switch self {
            case .exact(let name):
                return length == name.count && Self.has(name, in: text, at: start)
            case .prefix(let head):
                return length >= head.count && Self.has(head, in: text, at: start)
            case .suffix(let tail):
                return length >= tail.count && Self.has(tail, in: text, at: end - tail.count)
            case .prefixAndSuffix(let head, let tail):
                return length >= head.count + tail.count
                    && Self.has(head, in: text, at: start) && Self.has(tail, in: text, at: end - tail.count)
            case .anything:
                return true
            case .glob(let tokens):
                return Self.glob(tokens, text, from: start, to: end)
            }
        }

        private static func has(_ bytes: [UInt8], in text: Span<UInt8>, at start: Int) -> Bool {
            for offset in bytes.indices where text[start + offset] != bytes[offset] { return false }
            return true
        }

        /// Wildcard match where `*` is any run of bytes. The text holds no "/", so remembering
        /// only the last `*` is enough: on a mismatch it absorbs one more byte and matching
        /// resumes after it. Time is at most tokens × bytes, whatever the pattern.
        private static func glob(_ tokens: [Token], _ text: Span<UInt8>, from start: Int, to end: Int) -> Bool {
            var token = 0, position = start
            var starToken = -1, starPosition = start
            while position < end {
                if token < tokens.count {
                    let byte = text[position]
                    switch tokens[token] {
                    case .star:
                        starToken = token
                        starPosition = position
                        token += 1
                        continue
                    case .anyByte:
                        token += 1; position += 1
                        continue
                    case .byte(let expected) where expected == byte:
                        token += 1; position += 1
                        continue
                    case .set(let set) where set.contains(byte):
                        token += 1; position += 1
                        continue
                    default:
                        break
                    }
                }
                guard starToken >= 0 else { return false }
                starPosition += 1
                token = starToken + 1
                position = starPosition
            }
            while token < tokens.count, tokens[token] == .star { token += 1 }
            return token == tokens.count
        }
    }

    /// One element of a compiled glob, within a component.
    enum Token: Sendable, Equatable {
        case byte(UInt8)
        /// `?`
        case anyByte
        /// `[...]`, already inverted if written `[!...]` / `[^...]`; never contains "/".
        case set(ByteSet)
        /// `*`, and `**` when it is not a whole component.
        case star
    }

    /// 256 bits, one per byte value: a compiled `[...]` class, tested in constant time.
    /// Four inline words rather than an array: no heap, no reference counting when copied.
    struct ByteSet: Sendable, Equatable {
        private var low: (UInt64, UInt64) = (0, 0)
        private var high: (UInt64, UInt64) = (0, 0)

        static let all: ByteSet = {
            var set = ByteSet()
            set.invert()
            return set
        }()

        static func == (a: ByteSet, b: ByteSet) -> Bool { a.low == b.low && a.high == b.high }

        func contains(_ byte: UInt8) -> Bool {
            let bit = UInt64(1) << UInt64(byte & 63)
            switch byte >> 6 {
            case 0: return low.0 & bit != 0
            case 1: return low.1 & bit != 0
            case 2: return high.0 & bit != 0
            default: return high.1 & bit != 0
            }
        }

        mutating func insert(_ byte: UInt8) {
            let bit = UInt64(1) << UInt64(byte & 63)
            switch byte >> 6 {
            case 0: low.0 |= bit
            case 1: low.1 |= bit
            case 2: high.0 |= bit
            default: high.1 |= bit
            }
        }

        mutating func insert(_ range: ClosedRange<UInt8>) {
            for byte in range { insert(byte) }
        }

        mutating func insert(where predicate: (UInt8) -> Bool) {
            for byte in UInt8.min...UInt8.max where predicate(byte) { insert(byte) }
        }

        mutating func remove(_ byte: UInt8) {
            let bit = ~(UInt64(1) << UInt64(byte & 63))
            switch byte >> 6 {
            case 0: low.0 &= bit
            case 1: low.1 &= bit
            case 2: high.0 &= bit
            default: high.1 &= bit
            }
        }

        mutating func invert() {
            low = (~low.0, ~low.1)
            high = (~high.0, ~high.1)
        }
    }
}

// MARK: - Compiling

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
