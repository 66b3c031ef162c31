@testable import NimbusClient
import Testing

/// Colour only on a terminal, never with NO_COLOR (any non-empty value), --no-color or
/// TERM=dumb; progress bars only when stderr is a terminal.
struct OutputStyleTests {
    func style(_ environment: [String: String], noColor: Bool = false, json: Bool = false,
               stdoutTTY: Bool = true, stderrTTY: Bool = true) -> OutputStyle {
        OutputStyle.detect(global: GlobalOptions(json: json, noColor: noColor), environment: environment,
                           isTerminal: { $0 == 1 ? stdoutTTY : stderrTTY }, columns: { _ in 100 })
    }

    @Test func colourOnATerminal() {
        let s = style(["TERM": "xterm-256color"])
        #expect(s.colorOnStandardOutput && s.colorOnStandardError && s.progressBars)
        #expect(s.width == 100)
    }

    @Test(arguments: ["1", "0", "false", "yes"])
    func anyNonEmptyNoColorTurnsColourOff(_ value: String) {
        let s = style(["NO_COLOR": value])
        #expect(!s.colorOnStandardOutput && !s.colorOnStandardError)
        #expect(s.progressBars, "NO_COLOR is about colour, not progress")
    }

    @Test func anEmptyNoColorIsIgnored() {
        #expect(style(["NO_COLOR": ""]).colorOnStandardOutput)
    }

    @Test func theFlagAndDumbTerminalsTurnColourOff() {
        #expect(!style([:], noColor: true).colorOnStandardOutput)
        #expect(!style([:], noColor: true).colorOnStandardError)
        let dumb = style(["TERM": "dumb"])
        #expect(!dumb.colorOnStandardOutput && !dumb.progressBars)
    }

    @Test func eachStreamIsJudgedOnItsOwn() {
        let piped = style([:], stdoutTTY: false)
        #expect(!piped.colorOnStandardOutput && piped.colorOnStandardError)
        #expect(piped.width == nil)
        let quiet = style([:], stderrTTY: false)
        #expect(quiet.colorOnStandardOutput && !quiet.progressBars)
    }

    @Test func jsonIsNeverColouredNorDrawsBars() {
        let s = style([:], json: true)
        #expect(!s.colorOnStandardOutput && !s.progressBars && s.json)
    }

    @Test func paintIsANoOpWhenDisabled() {
        #expect(Paint.red.apply("x", enabled: false) == "x")
        #expect(Paint.red.apply("x", enabled: true) == "\u{1B}[31mx\u{1B}[0m")
        #expect(Paint.red.apply("", enabled: true) == "")
    }
}
