import FoundationEssentials
import NimbusCore
import NimbusSystem

/// Where nimbusctl writes. Tests swap in one that records; the real one writes each piece
/// with one `write(2)` so that lines from stdout and stderr never tear.
struct Console: Sendable {
    enum Stream: Sendable { case output, error }

    let write: @Sendable (String, Stream) -> Void

    func out(_ text: String) { write(text + "\n", .output) }
    func err(_ text: String) { write(text + "\n", .error) }

    static let standard = Console { text, stream in
        ProcessSupport.write(text, toStandardError: stream == .error)
    }
}

/// The facts every renderer needs besides the data: colour, the time now and the local
/// offset from UTC (for clock times).
struct RenderContext: Sendable {
    var color: Bool
    /// Seconds since 1970.
    var now: Double
    var utcOffsetSeconds: Int = 0
    /// How this nimbusctl reached its daemon (`--socket PATH`, `--instance NAME`), repeated
    /// in every command printed for pasting so that it reaches the same daemon.
    var reach: [String] = []

    static func current(color: Bool, reach: [String] = []) -> RenderContext {
        RenderContext(color: color, now: Date().timeIntervalSince1970,
                      utcOffsetSeconds: ProcessSupport.utcOffsetSeconds, reach: reach)
    }

    /// `nimbusctl [--socket PATH] words…`, every word shell-quoted as needed, for pasting.
    func command(_ words: String...) -> String {
        ShellWord.command(["nimbusctl"] + reach + words)
    }

    /// `nimbusctl [--socket PATH]`, quoted, before a synopsis such as `resolve PATH --keep …`.
    var program: String { ShellWord.command(["nimbusctl"] + reach) }

    /// A command inside a sentence: in single quotes, unless it holds quotes of its own
    /// (a quoted socket path), which a pair around it would only confuse.
    func cite(_ words: String...) -> String {
        let command = ShellWord.command(["nimbusctl"] + reach + words)
        return command.contains("'") ? command : "'" + command + "'"
    }

    func paint(_ text: String, _ paint: Paint?) -> String {
        paint.map { $0.apply(text, enabled: color) } ?? text
    }

    /// "3 min ago" for a wire time in nanoseconds.
    func ago(_ nanoseconds: Int64) -> String {
        Format.relativeTime(Self.seconds(nanoseconds), now: now)
    }

    /// "2025-01-31 09:15" in local time.
    func localDateTime(_ nanoseconds: Int64) -> String {
        let seconds = Self.seconds(nanoseconds) + Double(utcOffsetSeconds)
        return Format.date(seconds) + " " + Format.clock(seconds).prefix(5)
    }

    /// "09:15:02" in local time.
    func localClock(_ nanoseconds: Int64) -> String {
        Format.clock(Self.seconds(nanoseconds) + Double(utcOffsetSeconds))
    }

    /// A wire time (nanoseconds since the epoch) in the seconds the formatters take, as
    /// `now` is: the one place the client turns one into the other.
    static func seconds(_ nanoseconds: Int64) -> Double { Double(nanoseconds) / 1e9 }
}
