/// One line of progress for long work, redrawn in place on a terminal:
/// `talk.mp4  [███████████░░░░░░░░░]  55%  1.2 GB of 2.2 GB`.
enum ProgressBar {
    /// The line for `fraction` (0…1), fitting in `width` columns: the label is shortened from
    /// the left (the end of a path says most), and the bar shrinks before it disappears.
    static func line(label: String, fraction: Double, detail: String, width: Int) -> String {
        let percent = Format.percent(fraction)
        let room = max(width - 1, 20)  // never write into the last column: some terminals wrap
        var tail = "  " + String(repeating: " ", count: max(0, 4 - percent.count)) + percent
        // On a narrow terminal the detail goes first, then the bar; the label and the
        // percentage stay.
        if !detail.isEmpty, room - DisplayWidth.of(tail) - DisplayWidth.of(detail) - 2 >= 10 { tail += "  " + detail }
        var barWidth = min(30, max(0, room - DisplayWidth.of(tail) - 16))
        if barWidth < 5 { barWidth = 0 }
        let labelRoom = max(1, room - DisplayWidth.of(tail) - (barWidth > 0 ? barWidth + 4 : 0))
        let shownLabel = shorten(TerminalText.printable(label), to: labelRoom)
        let bar = barWidth > 0 ? "  [" + cells(fraction, width: barWidth) + "]" : ""
        return shownLabel + bar + tail
    }

    static func cells(_ fraction: Double, width: Int) -> String {
        let filled = Int((min(max(fraction, 0), 1) * Double(width)).rounded(.down))
        return String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
    }

    /// "…/Photos/2024/IMG_0001.jpg" when "Archive/Photos/2024/IMG_0001.jpg" is too long.
    static func shorten(_ text: String, to width: Int) -> String {
        guard DisplayWidth.of(text) > width else { return text }
        var kept = ""
        for character in text.reversed() {
            let next = String(character) + kept
            if DisplayWidth.of(next) + 1 > width { break }
            kept = next
        }
        return "…" + kept
    }

    /// Return to the start of the line and clear it, so the next draw replaces the last.
    static let redraw = "\r\u{1B}[K"
}
