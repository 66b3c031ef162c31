import NimbusProtocol

/// Text from outside nimbusctl (file names, the daemon's messages) made safe to print for
/// people. A Linux name may hold any byte but `/` and NUL: a newline would split a row of
/// `ls` into two, and an escape sequence (`ESC [2J`, an OSC title) would be obeyed by the
/// terminal, so another device could clear or rewrite the screen with a file name. Each
/// control character (C0, DEL and C1) is shown as `\xNN`, as the bytes of a name that is not
/// UTF-8 already are (WirePath); `--json` keeps every name exact.
enum TerminalText {
    static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                let hex = String(scalar.value, radix: 16, uppercase: true)
                result += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    static func printable(_ text: String?) -> String? { text.map { printable($0) } }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
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
