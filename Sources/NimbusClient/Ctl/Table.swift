/// Text in aligned columns. Widths are measured on the plain text, and colour is added after
/// padding, so escapes never throw the alignment off.
struct Table {
    enum Alignment { case left, right }

    struct Cell: ExpressibleByStringLiteral {
        var text: String
        var paint: Paint?

        /// `text` may come from outside (a file name): its control characters are shown
        /// escaped (`TerminalText`), so a cell is always one line the terminal only displays.
        init(_ text: String, _ paint: Paint? = nil) {
            self.text = TerminalText.printable(text)
            self.paint = paint
        }

        init(stringLiteral value: String) { self.init(value) }
    }

    var alignments: [Alignment]
    var rows: [[Cell]] = []
    /// Between columns.
    var gap = "  "

    init(_ alignments: [Alignment]) { self.alignments = alignments }

    mutating func add(_ row: [Cell]) { rows.append(row) }

    /// One string per row, without a trailing newline and without trailing blanks.
    func lines(color: Bool) -> [String] {
        var widths = [Int](repeating: 0, count: alignments.count)
        for row in rows {
            for (column, cell) in row.enumerated() where column < widths.count {
                widths[column] = max(widths[column], DisplayWidth.of(cell.text))
            }
        }
        return rows.map { row in
            var parts: [String] = []
            for (column, cell) in row.enumerated() {
                let isLast = column == row.count - 1
                let padding = String(repeating: " ", count: max(0, widths[min(column, widths.count - 1)] - DisplayWidth.of(cell.text)))
                let painted = cell.paint.map { $0.apply(cell.text, enabled: color) } ?? cell.text
                switch alignments[min(column, alignments.count - 1)] {
                case .left: parts.append(isLast ? painted : painted + padding)
                case .right: parts.append(padding + painted)
                }
            }
            // An empty last cell would leave the gap and padding behind.
            var line = parts.joined(separator: gap)
            while line.last == " " { line.removeLast() }
            return line
        }
    }

    func render(color: Bool) -> String {
        lines(color: color).joined(separator: "\n")
    }
}

/// How many terminal columns a string takes: East Asian wide characters and emoji take two,
/// combining marks and zero-width characters none.
enum DisplayWidth {
    static func of(_ text: String) -> Int {
        var width = 0
        for scalar in text.unicodeScalars { width += of(scalar) }
        return width
    }

    static func of(_ scalar: Unicode.Scalar) -> Int {
        let v = scalar.value
        // ASCII, most of any listing, without the Unicode property tables.
        if v < 0x7F { return v >= 0x20 ? 1 : 0 }
        if v == 0x200B || v == 0x200D || (0xFE00...0xFE0F).contains(v) { return 0 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format, .control: return 0
        default: break
        }
        return isWide(v) ? 2 : 1
    }

    static func isWide(_ v: UInt32) -> Bool {
        switch v {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
             0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
             0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x3FFFD:
            return true
        default:
            return false
        }
    }
}
