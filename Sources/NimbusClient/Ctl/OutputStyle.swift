import NimbusSystem

/// How to print: colour, progress bars and width, decided once from the terminal, the
/// environment and the flags.
///
/// Colour follows https://no-color.org: never when `NO_COLOR` holds any non-empty value,
/// never with `--no-color`, never when `TERM=dumb`, and only on a terminal. Each stream is
/// judged on its own, so `nimbusctl ls | less` has no escapes while its errors on the
/// terminal are still red.
struct OutputStyle: Equatable, Sendable {
    var colorOnStandardOutput = false
    var colorOnStandardError = false
    /// Progress bars are drawn on stderr, only when it is a terminal.
    var progressBars = false
    /// Columns of the terminal on stdout; nil when not a terminal.
    var width: Int?
    /// Columns of the terminal on stderr, where progress bars are drawn.
    var progressWidth: Int?
    var json = false

    /// Plain text: what tests and pipes get.
    static let plain = OutputStyle()

    static func detect(global: GlobalOptions, environment: [String: String],
                       isTerminal: (Int32) -> Bool = Terminal.isTerminal,
                       columns: (Int32) -> Int? = Terminal.columns(of:)) -> OutputStyle {
        let colorAllowed = !global.noColor && (environment["NO_COLOR"] ?? "").isEmpty && environment["TERM"] != "dumb"
        let stdoutTTY = isTerminal(Terminal.standardOutput)
        let stderrTTY = isTerminal(Terminal.standardError)
        var style = OutputStyle()
        style.colorOnStandardOutput = colorAllowed && stdoutTTY && !global.json
        style.colorOnStandardError = colorAllowed && stderrTTY
        style.progressBars = stderrTTY && !global.json && environment["TERM"] != "dumb"
        let fallback = Int(environment["COLUMNS"] ?? "")
        style.width = stdoutTTY ? (columns(Terminal.standardOutput) ?? fallback) : nil
        style.progressWidth = stderrTTY ? (columns(Terminal.standardError) ?? fallback) : nil
        style.json = global.json
        return style
    }
}

/// The few colours nimbusctl uses, as ANSI SGR sequences.
enum Paint: String, Sendable {
    case red = "31", green = "32", yellow = "33", blue = "34", magenta = "35", cyan = "36"
    case bold = "1", dim = "2"

    /// `text` wrapped in the escape when `enabled`, else `text` unchanged.
    func apply(_ text: String, enabled: Bool) -> String {
        enabled && !text.isEmpty ? "\u{1B}[\(rawValue)m\(text)\u{1B}[0m" : text
    }
}
