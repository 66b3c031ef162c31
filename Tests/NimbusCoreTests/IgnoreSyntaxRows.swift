import Testing

/// One row of the syntax table: a `.nimbusignore` file, a path, and whether it is ignored.
/// Expectations follow gitignore(5) and what `git check-ignore` answers.
struct IgnoreRow: CustomTestStringConvertible, Sendable {
    var file: String
    var path: String
    var isDirectory: Bool
    var ignored: Bool
    var testDescription: String {
        "\(file.debugDescription) \(path.debugDescription)\(isDirectory ? " (dir)" : "") → \(ignored ? "ignored" : "kept")"
    }
}

private func row(_ file: String, _ path: String, dir: Bool = false, _ ignored: Bool) -> IgnoreRow {
    IgnoreRow(file: file, path: path, isDirectory: dir, ignored: ignored)
}
let syntaxRows: [IgnoreRow] = [
    // Blank lines and comments.
    row("# comment\n\n*.o", "a.o", true),
    row("# comment", "# comment", false),
    row("#foo", "#foo", false),
    row("\\#foo", "#foo", true),
    row("   ", "   ", false),
    // `!` and its escape.
    row("\\!important", "!important", true),
    row("!important", "important", false),
    // Trailing spaces: dropped unless escaped; tabs and leading spaces are part of the pattern.
    row("foo   ", "foo", true),
    row("foo   ", "foo   ", false),
    row("foo\\ ", "foo ", true),
    row("foo\\ ", "foo", false),
    row("foo\\   ", "foo ", true),
    row("foo\\ \\ ", "foo  ", true),
    row("foo\t", "foo\t", true),
    row("foo\t", "foo", false),
    row("  foo", "  foo", true),
    row("  foo", "foo", false),
    // Negation; the last matching line wins.
    row("*.log\n!keep.log", "keep.log", false),
    row("*.log\n!keep.log", "app.log", true),
    row("!keep.log\n*.log", "keep.log", true),
    row("logs/\n!logs/", "logs", dir: true, false),
    // A path inside an ignored directory cannot be re-included…
    row("/build/\n!build/keep.txt", "build/keep.txt", true),
    row("build\n!build/keep.txt", "build/keep.txt", true),
    // …but `dir/*` ignores the contents, not the directory, so a `!` works below it.
    row("build/*\n!build/keep.txt", "build/keep.txt", false),
    row("build/*\n!build/keep.txt", "build/other.txt", true),
    row("foo/*", "foo", dir: true, false),
    row("foo/*", "foo/bar", dir: true, true),
    row("foo/*", "foo/bar/baz", true),
    row("foo/*\n!foo/bar", "foo/bar/baz", false),
    row("foo/*\n!foo/bar/baz", "foo/bar/baz", true),
    // Anchoring: a slash at the start or in the middle ties the pattern to the root.
    row("/foo", "foo", true),
    row("/foo", "a/foo", false),
    row("foo", "a/b/foo", true),
    row("foo", "a/b/foo/c", true),
    row("doc/frotz", "doc/frotz", true),
    row("doc/frotz", "a/doc/frotz", false),
    row("doc/frotz/", "doc/frotz", dir: true, true),
    row("doc/frotz/", "a/doc/frotz", dir: true, false),
    row("doc/frotz/", "doc/frotz", false),
    row("frotz/", "a/frotz", dir: true, true),
    row("frotz/", "frotz", dir: true, true),
    row("frotz/", "a/frotz", false),
    row("frotz/", "frotz/x", true),
    row("/a/b", "a/b", true),
    row("a/b", "x/a/b", false),
    row("a/b", "a/b/c", true),
    // `*` and `?` never cross "/"; names starting with "." are not special.
    row("*.c", "a/b/x.c", true),
    row("*.c", "x.c.txt", false),
    row("*.c", ".c", true),
    row("*", ".hidden", true),
    row(".*", ".x", true),
    row(".*", "x", false),
    row("a/*.c", "a/x.c", true),
    row("a/*.c", "a/b/x.c", false),
    row("a/*.c", "b/a/x.c", false),
    row("a*b", "ab", true),
    row("a*b", "axxb", true),
    row("a*b", "axxbc", false),
    row("*a*b*c", "xaybzc", true),
    row("*a*b*c", "aaa", false),
    row("a*b*c*d*e*f*g", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false),
    row("*.TXT", "a.txt", false),
    row("?.txt", "a.txt", true),
    row("?.txt", "ab.txt", false),
    row("?.txt", ".txt", false),
    row("x?y/z", "x/y/z", false),
    row("x*y/z", "x/y/z", false),
    // Classes.
    row("[abc].txt", "b.txt", true),
    row("[abc].txt", "d.txt", false),
    row("[a-c]x", "bx", true),
    row("[a-c]x", "dx", false),
    row("[!a-c]x", "dx", true),
    row("[!a-c]x", "ax", false),
    row("[^a-c]x", "dx", true),
    row("[^a-c]x", "bx", false),
    row("[]]x", "]x", true),
    row("[!]]x", "]x", false),
    row("[!]]x", "ax", true),
    row("[a-]x", "-x", true),
    row("[-a]x", "-x", true),
    row("[\\]]x", "]x", true),
    row("[\\!]x", "!x", true),
    row("[a-c-e]x", "-x", true),
    row("[a-c-e]x", "dx", false),
    row("[z-a]", "m", false),
    row("[[:digit:]]x", "5x", true),
    row("[[:digit:]]x", "ax", false),
    row("[[:upper:][:digit:]]", "A", true),
    row("[[:upper:][:digit:]]", "7", true),
    row("[[:upper:][:digit:]]", "a", false),
    row("[![:alpha:]]", "1", true),
    row("[![:alpha:]]", "q", false),
    row("q[[:x]", "q:", true),  // no ":]" before "]": "[" is an ordinary member (git agrees)
    row("q[[:x]", "q[", true),
    row("a[/]b", "a/b", false),
    row("x[ab", "x[ab", false),  // unterminated: reported and skipped (git never matches it)
    row("x[ab", "xa", false),
    // `**`.
    row("**/foo", "foo", true),
    row("**/foo", "a/b/foo", true),
    row("**/foo", "foo/x", true),
    row("**/foo/bar", "bar", false),
    row("**/foo/bar", "foo/bar", true),
    row("**/foo/bar", "x/y/foo/bar", true),
    row("abc/**", "abc", dir: true, false),
    row("abc/**", "abc/x", true),
    row("abc/**", "abc/x/y", true),
    row("abc/**", "x/abc/y", false),
    row("a/**/b", "a/b", true),
    row("a/**/b", "a/x/b", true),
    row("a/**/b", "a/x/y/b", true),
    row("a/**/b", "a/xb", false),
    row("a/**/b", "b", false),
    row("a/**/**/b", "a/b", true),
    row("a/**b", "a/xb", true),  // not a whole component: a plain `*`
    row("a/**b", "a/x/b", false),
    row("**", "a/b/c", true),
    row("/**", "a", true),
    row("**.c", "a/x.c", true),
    row("foo**/bar", "foox/bar", true),
    row("foo**/bar", "foox/y/bar", false),  // as git documents; git 2.39 itself says ignored
    // Escapes.
    row("\\*", "*", true),
    row("\\*", "x", false),
    row("\\?", "?", true),
    row("\\?", "a", false),
    row("\\[a]", "[a]", true),
    row("\\[a]", "a", false),
    row("a\\b", "ab", true),
    row("\\\\", "\\", true),
    row("a\\/b", "a/b", true),
    row("a\\/b", "x/a/b", false),
    // Line endings.
    row("foo\r\nbar", "foo", true),
    row("foo\r\nbar", "bar", true),
    row("\u{FEFF}foo", "foo", true),
]
