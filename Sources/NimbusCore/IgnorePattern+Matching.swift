// Matching: a compiled pattern against a path's raw bytes, without allocating.

extension IgnorePattern {
    /// One "/"-separated part of an anchored pattern.
    enum Segment: Sendable {
        case name(NameMatcher)
        /// `**` before a "/": zero or more whole directories (`**/x`, `a/**/b`).
        case anyDirectories
        /// `**` at the end (`a/**`): one or more components, i.e. everything inside.
        case anyDescendants

        /// Matches `segments` against the whole `path`, component by component. A `**` that
        /// absorbs components is the only choice point, and only the latest one is ever
        /// revisited: every other segment matches exactly one component, so once a later `**`
        /// is reached, an earlier one absorbing more could only end further on, which the later
        /// one covers. So a match costs at most (segments × components) component comparisons,
        /// however many `**` the pattern has (trying each earlier `**` again was exponential in
        /// their number: a .nimbusignore line such as `**/a/**/a/**/a/**/a/**/c/**/b` kept the
        /// engine on one path for minutes, 150 folders deep).
        static func match(_ segments: [Segment], _ path: Span<UInt8>) -> Bool {
            // `position` starts the next component; past `path.count`, every one was consumed.
            let consumed = path.count + 1
            var index = 0, position = 0
            var globstar: (index: Int, position: Int)?
            while true {
                if index == segments.count {
                    if position == consumed { return true }
                } else {
                    switch segments[index] {
                    case .anyDirectories:
                        // Never last: compilation turns a trailing `**` into `.anyDescendants`.
                        globstar = (index, position)
                        index += 1
                        continue
                    case .anyDescendants:
                        if position < path.count { return true }
                    case .name(let matcher):
                        if position < consumed {
                            let end = nextSlash(path, from: position) ?? path.count
                            if matcher.matches(path, from: position, to: end) {
                                index += 1
                                position = end + 1
                                continue
                            }
                        }
                    }
                }
                // No match from here: the latest `**` absorbs one more component, if any is left.
                guard let star = globstar, star.position < consumed, let slash = nextSlash(path, from: star.position) else { return false }
                globstar = (star.index, slash + 1)
                index = star.index + 1
                position = slash + 1
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
