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
            return Segment.match(segments, path)
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
