import NimbusProtocol
import NimbusVocabulary

/// Text from outside nimbusctl (file names, the daemon's messages) made safe to print for
/// people. A Linux name may hold any byte but `/` and NUL: a newline would split a row of
/// `ls` into two, and an escape sequence (`ESC [2J`, an OSC title) would be obeyed by the
/// terminal, so another device could clear or rewrite the screen with a file name. Each
/// control character (C0, DEL and C1) is shown as `\xNN`, as the bytes of a name that is not
/// UTF-8 already are (WirePath); `--json` keeps every name exact.
enum TerminalText {
    static func printable(_ text: String) -> String { printableText(text) }

    static func printable(_ text: String?) -> String? { text.map { printableText($0) } }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool { isControlCharacter(scalar) }
}

extension EventParams {
    /// The fields a `watch` line shows, made printable (the exact ones stay in `--json`).
    var printable: EventParams {
        var e = self
        e.path = TerminalText.printable(path)
        e.message = TerminalText.printable(message)
        e.conflictCopy = TerminalText.printable(conflictCopy)
        e.reason = TerminalText.printable(reason)
        e.from = TerminalText.printable(from)
        e.paths = paths?.map { TerminalText.printable($0) }
        e.program = TerminalText.printable(program)
        return e
    }
}
