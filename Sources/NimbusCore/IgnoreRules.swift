import NimbusVocabulary

/// Which paths are left out of syncing: the `.nimbusignore` file of the local root, in
/// gitignore syntax, plus built-in defaults (DESIGN §4).
///
/// Semantics follow git: blank lines and `#` comments are skipped; trailing spaces are dropped
/// unless escaped (`\ `); `!` re-includes; `\!` and `\#` start a pattern with a literal `!` or
/// `#`; a pattern with a slash at the start or in the middle is anchored to the root, otherwise
/// it matches a name at any depth; a trailing `/` matches directories only; `*`, `?`, `[...]`
/// and `**` work as in git; bytes are matched as they are (no case folding, no encoding). The
/// last matching line wins, and a path inside an ignored directory is ignored whatever later
/// lines say, because git (and our scanner) never look inside such a directory.
///
/// Lines git would never match — an unterminated `[` class (git does not read it literally),
/// an unknown `[:name:]`, a lone trailing backslash, an empty pattern, an empty component
/// (`a//b`) — are reported in `problems` and skipped: the same result as git, plus the reason.
/// A line holding a NUL byte is reported too (git would cut it there). One deliberate
/// difference: `foo**/bar` means `foo*/bar` here, as gitignore(5) documents; git 2.39 also
/// matches `foox/y/bar` and even `foobar` with it.
///
/// Defaults come in two tiers. Nimbus's own files (`reservedPatterns`) are always ignored: no
/// `!` line re-includes them, since syncing them would break the engine. Editor and browser
/// leftovers (`overridablePatterns`) act as if written at the top of the file, so a user who
/// really wants `*.part` files synced writes `!*.part`.
public struct IgnoreRules: Sendable {
    /// Lines that were skipped, with their 1-based number and a sentence saying why.
    public var problems: [(line: Int, message: String)] = []

    /// The overridable defaults, the file's lines, then the reserved names: the last match
    /// decides, and as reserved patterns are never negated, no line can re-include them.
    private let patterns: [IgnorePattern]
    /// For each byte, the indices of the patterns that can match a path ending with it, in
    /// order: `candidates[starts[byte]..<starts[byte + 1]]`. Most patterns end with a fixed
    /// byte (`*.log`, `build/`), so a path is tried against a handful of them, not all.
    private let candidates: [Int32]
    private let starts: [Int]

    /// Parses the bytes of a `.nimbusignore` file. Never fails: an unusable line is reported
    /// in `problems` and skipped. `defaults: false` leaves out every built-in pattern (tests,
    /// and comparing with git).
    public init(parsing file: [UInt8], defaults: Bool = true) {
        var patterns = defaults ? Self.compiledOverridable : []
        var lineNumber = 0
        for rawLine in Self.lines(of: file) {
            lineNumber += 1
            guard let line = Self.patternText(rawLine) else { continue }
            if line.contains(0) {
                problems.append((lineNumber, "\(Self.quoted(line)): it contains a NUL byte, which no file name can"))
                continue
            }
            do {
                patterns.append(try IgnorePattern(compiling: line))
            } catch {
                problems.append((lineNumber, "\(Self.quoted(line)): \(error.message); the line is skipped"))
            }
        }
        if defaults { patterns += Self.compiledReserved }
        self.patterns = patterns

        let lastBytes = patterns.map(\.lastBytes)
        var candidates: [Int32] = [], starts: [Int] = []
        for byte in UInt8.min...UInt8.max {
            starts.append(candidates.count)
            for index in lastBytes.indices where lastBytes[index].contains(byte) { candidates.append(Int32(index)) }
        }
        starts.append(candidates.count)
        self.candidates = candidates
        self.starts = starts
    }

    /// Is `path` left out of syncing? The root itself never is.
    public func isIgnored(_ path: RelativePath, isDirectory: Bool) -> Bool {
        let bytes = path.bytes
        let span = bytes.span
        var nameStart = 0, depth = 1
        var index = 0
        // Each directory above the path first: once one is ignored, everything below is.
        while index < span.count {
            if span[index] == UInt8(ascii: "/") {
                if excludes(span.extracting(0..<index), depth: depth, nameStart: nameStart, isDirectory: true) {
                    return true
                }
                nameStart = index + 1
                depth += 1
            }
            index += 1
        }
        return !span.isEmpty && excludes(span, depth: depth, nameStart: nameStart, isDirectory: isDirectory)
    }

    /// The decision for one path, ignoring its ancestors: the last matching pattern.
    private func excludes(_ path: Span<UInt8>, depth: Int, nameStart: Int, isDirectory: Bool) -> Bool {
        let last = Int(path[path.count - 1])
        var index = starts[last + 1]
        while index > starts[last] {
            index -= 1
            let pattern = Int(candidates[index])
            if patterns[pattern].matches(path, depth: depth, nameStart: nameStart, isDirectory: isDirectory) {
                return !patterns[pattern].isNegated
            }
        }
        return false
    }
}

// MARK: - Defaults

extension IgnoreRules {
    /// Never synced, whatever the file says: syncing them would break Nimbus itself.
    public static let reservedPatterns: [String] = [
        // Copies in flight (DESIGN §3): half-written data, renamed into place when complete.
        String(decoding: TemporaryName.prefix, as: UTF8.self) + "*",
        // The identity marker of this local root; the other side has its own.
        "/.nimbus-root",
        // The ignore rules are a setting of this device, not content.
        "/.nimbusignore",
        // The cloud keeps its versions and in-flight uploads in `<cloud>/.nimbus/`; a local
        // entry of that name would be synced into them.
        "/.nimbus",
    ]

    /// Files that editors and browsers leave next to the real ones for a short time. Syncing
    /// them costs transfers and makes conflicts out of nothing; a `!` line re-includes one.
    public static let overridablePatterns: [String] = [
        // vim swap files (`.notes.txt.swp`); `.swo` when a second vim edits the same file,
        // `.swx` when vim probes whether it can create a swap file.
        ".*.swp", ".*.swo", ".*.swx",
        // Backups kept by vim, emacs, gedit, nano… as `name~`.
        "*~",
        // vim creates and deletes a file named 4913 to check that it may write a directory.
        "4913",
        // emacs lock files (`.#name`, a symlink to user@host).
        ".#*",
        // emacs auto-save files (`#name#`); the "\" keeps the line from being a comment.
        "\\#*#",
        // LibreOffice lock files (`.~lock.report.odt#`).
        ".~lock.*#",
        // Partial downloads of Firefox (`.part`) and Chrome/Chromium (`.crdownload`), renamed
        // to the real name when the download completes.
        "*.part", "*.crdownload",
    ]

    /// Every built-in pattern, as it would be written in a `.nimbusignore` file (for
    /// documentation and man pages). Placeholders (`*.nimbus`) are deliberately absent: the
    /// engine handles them itself.
    public static let defaultPatterns: [String] = reservedPatterns + overridablePatterns

    private static let compiledReserved = compile(reservedPatterns)
    private static let compiledOverridable = compile(overridablePatterns)

    private static func compile(_ texts: [String]) -> [IgnorePattern] {
        var patterns: [IgnorePattern] = []
        for text in texts {
            do {
                patterns.append(try IgnorePattern(compiling: ArraySlice(text.utf8)))
            } catch {
                preconditionFailure("built-in ignore pattern \(text): \(error.message)")
            }
        }
        return patterns
    }
}

// MARK: - Lines

extension IgnoreRules {
    /// The file's lines, without the "\n"; a UTF-8 byte order mark at the start is skipped.
    fileprivate static func lines(of file: [UInt8]) -> [ArraySlice<UInt8>] {
        var body = file[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        var lines = body.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        // A final "\n" ends the last line; it does not start an empty one.
        if lines.count > 1, lines.last?.isEmpty == true { lines.removeLast() }
        return lines
    }

    /// The pattern on a line, or nil for a blank line or a comment. As git does: a "\r" before
    /// the "\n" is dropped; trailing spaces are dropped unless a backslash escapes them.
    fileprivate static func patternText(_ rawLine: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        var line = rawLine
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        guard let first = line.first, first != UInt8(ascii: "#") else { return nil }
        // Find where the unescaped trailing spaces start; an escaped byte is never trimmed.
        var keep = line.startIndex
        var index = line.startIndex
        while index < line.endIndex {
            let byte = line[index]
            if byte == UInt8(ascii: "\\") {
                index = min(index + 2, line.endIndex)
                keep = index
                continue
            }
            index += 1
            if byte != UInt8(ascii: " ") { keep = index }
        }
        line = line[..<keep]
        return line.isEmpty ? nil : line
    }

    fileprivate static func quoted(_ line: ArraySlice<UInt8>) -> String {
        "\"" + displayString(Array(line)) + "\""
    }
}
