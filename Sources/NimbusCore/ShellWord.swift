/// Words of commands printed for pasting into a shell (`nimbusctl restore 'a b.txt'`): a
/// word that a shell would split, expand or glob is quoted, a plain one is left as it is so
/// that the hint stays readable.
public enum ShellWord {
    /// Characters that never mean anything to sh, bash, zsh or fish inside a word.
    static let plain = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-".unicodeScalars)

    /// `text` as one shell word: as it is when every character is plain, else single-quoted
    /// (or bash's `$'…'` when it holds control characters).
    public static func quote(_ text: String) -> String {
        if !text.isEmpty, text.unicodeScalars.allSatisfy(plain.contains) {
            return text
        }
        return Placeholder.shellQuoted(Array(text.utf8))
    }

    /// The bytes of a path as one shell word (names that are not UTF-8 included).
    public static func quote(bytes: [UInt8]) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return quote(text) }
        return Placeholder.shellQuoted(bytes)
    }

    /// Words joined into a command line, each quoted as needed.
    public static func command(_ words: [String]) -> String {
        words.map(quote).joined(separator: " ")
    }
}
