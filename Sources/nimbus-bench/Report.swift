import Foundation

/// One target of a figure: a bound on the value, or on the ratio to a comparison.
struct Target {
    enum Bound {
        case below(Double)
        case atMost(Double)
        case atLeast(Double)

        func holds(_ x: Double) -> Bool {
            switch self {
            case .below(let limit): x < limit
            case .atMost(let limit): x <= limit
            case .atLeast(let limit): x >= limit
            }
        }

        var text: String {
            switch self {
            case .below(let limit): "< \(String(format: "%g", limit))"
            case .atMost(let limit): "<= \(String(format: "%g", limit))"
            case .atLeast(let limit): ">= \(String(format: "%g", limit))"
            }
        }
    }

    /// What the bound applies to, as shown ("p50", "ratio", "bytes copied").
    var subject: String
    var bound: Bound
    /// The measured quantity; nil when it could not be measured.
    var actual: Double?
    var unit: String = ""

    var passed: Bool? { actual.map(bound.holds) }
    var text: String { "\(subject) \(bound.text)" + (unit.isEmpty ? "" : " " + unit) }
}

/// One line of the report.
struct Figure {
    var name: String
    var value: Double?
    var unit: String
    var targets: [Target] = []
    /// Other programs doing the same work in the same run: label → median (nil: not measured).
    var compare: [(label: String, value: Double?)] = []
    /// The ratio the target is about (or the main one), and what it is a ratio to.
    var ratio: Double?
    var ratioLabel: String?
    var runs: [Double] = []
    /// Secondary figures (p99, peak memory, time per file…), in the order shown.
    var extra: [(key: String, value: Double)] = []
    var note: String = ""
    /// Why the figure could not be measured.
    var failure: String?

    init(name: String, value: Double?, unit: String) {
        self.name = name
        self.value = value
        self.unit = unit
    }

    static func failed(_ name: String, unit: String, _ reason: String) -> Figure {
        var figure = Figure(name: name, value: nil, unit: unit)
        figure.failure = reason
        return figure
    }

    /// nil when there is no target, or it could not be checked.
    var pass: Bool? {
        if failure != nil { return false }
        guard !targets.isEmpty else { return nil }
        let results = targets.map(\.passed)
        if results.contains(false) { return false }
        return results.contains(nil) ? nil : true
    }

    var targetText: String { targets.map(\.text).joined(separator: ", ") }

    // MARK: - JSON

    /// `{"name":…,"value":…,"unit":…,"target":…,"pass":…,"compare":{…},"ratio":…,"runs":[…],…}`
    var jsonLine: String {
        var fields: [(String, String)] = [
            ("name", json(name)),
            ("value", json(value)),
            ("unit", json(unit)),
            ("target", targets.isEmpty ? "null" : json(targetText)),
            ("pass", pass.map { $0 ? "true" : "false" } ?? "null"),
            ("compare", "{" + compare.map { "\(json($0.label)):\(json($0.value))" }.joined(separator: ",") + "}"),
            ("ratio", json(ratio)),
            ("ratio_to", ratioLabel.map(json) ?? "null"),
            ("runs", "[" + runs.map { json($0) }.joined(separator: ",") + "]"),
        ]
        if !extra.isEmpty {
            fields.append(("extra", "{" + extra.map { "\(json($0.key)):\(json($0.value))" }.joined(separator: ",") + "}"))
        }
        if !note.isEmpty { fields.append(("note", json(note))) }
        if let failure { fields.append(("error", json(failure))) }
        return "{" + fields.map { "\(json($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }
}

/// The header, the table and the JSON lines.
struct Report {
    var figures: [Figure] = []

    static func header(machine: [(String, String)]) -> String {
        "nimbus-bench — " + machine.map { "\($0.0): \($0.1)" }.joined(separator: " | ")
    }

    /// A fixed-width table; long comparisons wrap onto their own lines below the row.
    func table() -> String {
        let headings = ["figure", "value", "unit", "target", "pass", "ratio", "compared in the same run"]
        var rows: [[String]] = []
        for figure in figures {
            let pass = figure.failure != nil ? "FAILED" : figure.pass.map { $0 ? "pass" : "MISS" } ?? "-"
            let ratio = figure.ratio.map { format($0) + (figure.ratioLabel.map { " (\($0))" } ?? "") } ?? "-"
            var compare = figure.compare.map { "\($0.label) \($0.value.map(format) ?? "n/m")" }.joined(separator: "; ")
            if let failure = figure.failure { compare = "error: " + failure }
            rows.append([figure.name, figure.value.map(format) ?? "-", figure.unit, figure.targetText.isEmpty ? "-" : figure.targetText,
                         pass, ratio, compare])
        }
        var widths = headings.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated().dropLast() { widths[index] = max(widths[index], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                index == cells.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        var lines = [line(headings), String(repeating: "-", count: widths.dropLast().reduce(0, +) + 2 * (widths.count - 1) + 24)]
        for (row, figure) in zip(rows, figures) {
            lines.append(line(row))
            let details = figure.extra.map { "\($0.key)=\(format($0.value))" }.joined(separator: " ")
            if !details.isEmpty { lines.append("    " + details) }
            if !figure.note.isEmpty { lines.append("    note: " + figure.note) }
        }
        return lines.joined(separator: "\n")
    }

    func jsonLines() -> String { figures.map(\.jsonLine).joined(separator: "\n") }
}

/// A number with about four significant digits, without exponent for ordinary magnitudes.
func format(_ x: Double) -> String {
    if x.isNaN || x.isInfinite { return "\(x)" }
    if x == x.rounded() && abs(x) < 1e12 { return String(Int64(x)) }
    let magnitude = abs(x)
    let digits = magnitude >= 1000 ? 0 : magnitude >= 100 ? 1 : magnitude >= 10 ? 2 : magnitude >= 1 ? 3 : magnitude >= 0.01 ? 4 : 6
    return String(format: "%.\(digits)f", x)
}

private func json(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

private func json(_ number: Double?) -> String {
    guard let number, number.isFinite else { return "null" }
    if number == number.rounded() && abs(number) < 1e15 { return String(Int64(number)) }
    return String(format: "%.6g", number)
}
