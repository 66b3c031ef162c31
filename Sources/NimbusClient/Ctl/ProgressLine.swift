import FoundationEssentials
import Synchronization

/// The progress bar on stderr while downloads run or `watch` shows transfers. Thread-safe:
/// notifications arrive on the reader's task while results arrive on others. Draws at most
/// ten times a second, and clears itself before other output so lines never mix.
final class ProgressLine: Sendable {
    private let console: Console
    private let enabled: Bool
    private let width: Int
    private let state = Mutex(State())

    struct State {
        var label = ""
        var fraction = 0.0
        var detail = ""
        var shown = false
        var lastDraw = 0.0
    }

    init(console: Console, enabled: Bool, width: Int?) {
        self.console = console
        self.enabled = enabled
        self.width = width ?? 80
    }

    func update(label: String, fraction: Double, detail: String, force: Bool = false) {
        guard enabled else { return }
        let now = Date().timeIntervalSince1970
        let line: String? = state.withLock { s in
            s.label = label
            s.fraction = fraction
            s.detail = detail
            guard force || now - s.lastDraw >= 0.1 else { return nil }
            s.lastDraw = now
            s.shown = true
            return ProgressBar.line(label: label, fraction: fraction, detail: detail, width: width)
        }
        if let line { console.write(ProgressBar.redraw + line, .error) }
    }

    /// Removes the bar (for good, until the next update).
    func clear() {
        guard enabled else { return }
        let wasShown = state.withLock { s in
            defer { s.shown = false }
            return s.shown
        }
        if wasShown { console.write(ProgressBar.redraw, .error) }
    }

    /// Writes a line of ordinary output with the bar out of the way, then puts it back.
    func printAbove(_ text: String) {
        guard enabled else { return console.out(text) }
        let bar: String? = state.withLock { s in
            s.shown ? ProgressBar.line(label: s.label, fraction: s.fraction, detail: s.detail, width: width) : nil
        }
        if bar != nil { console.write(ProgressBar.redraw, .error) }
        console.out(text)
        if let bar { console.write(bar, .error) }
    }
}
