/// The description of nimbusctl's command line as data. One table drives the parser, the help
/// pages and the shell completions, so the three cannot disagree.
struct OptionSpec: Sendable, Equatable {
    /// Without the dashes: "recursive" for `--recursive`.
    var long: String
    /// A one-letter alias: "r" for `-r`.
    var short: Character?
    /// The placeholder for the value ("STATE"), or nil for a flag that takes none.
    var value: String?
    /// The values the option accepts, for validation, help and completion; empty means any.
    var choices: [String] = []
    /// Complete the value with file names.
    var completesFiles = false
    /// A required option is written without brackets in the usage line (`resolve --keep`).
    var isRequired = false
    var help: String

    var spelling: String { "--" + long }
    var spellings: [String] { [spelling] + (short.map { ["-\($0)"] } ?? []) }
    var takesValue: Bool { value != nil }

    /// `--keep local|cloud|both` when the choices are few, else `--state STATE`.
    var usageText: String {
        let name = short.map { "-\($0)" } ?? spelling
        guard let value else { return name }
        let shown = !choices.isEmpty && choices.count <= 3 ? choices.joined(separator: "|") : value
        return name + " " + shown
    }

    /// `-r, --recursive` or `--state STATE`, as the help shows it.
    var synopsis: String {
        let names = (short.map { "-\($0), " } ?? "") + spelling
        return value.map { names + " " + $0 } ?? names
    }
}

struct ArgumentSpec: Sendable, Equatable {
    enum Count: Sendable, Equatable { case one, optional, oneOrMore }

    var name: String
    var count: Count
    var choices: [String] = []
    var completesFiles = true
    var help: String
    /// How the usage line shows it, when not by its name (`-- COMMAND [ARGS...]` of lock).
    var display: String?

    /// `PATH`, `[PATH]` or `PATH...`, as the usage line shows it.
    var synopsis: String {
        if let display { return display }
        return switch count {
        case .one: name
        case .optional: "[\(name)]"
        case .oneOrMore: "\(name)..."
        }
    }
}

struct CommandSpec: Sendable, Equatable {
    var name: String
    /// One line, no full stop: the command list and the completions show it.
    var summary: String
    /// More paragraphs for `nimbusctl help NAME`.
    var discussion: String = ""
    var arguments: [ArgumentSpec] = []
    var options: [OptionSpec] = []
    var examples: [String] = []
    /// The options come before the arguments in the usage line (lock, whose last argument
    /// is a command line of its own).
    var optionsFirst = false

    /// `nimbusctl ls [PATH] [-r] [--state STATE]`.
    var usage: String {
        let options = options.map { $0.isRequired ? $0.usageText : "[\($0.usageText)]" }
        let arguments = arguments.map(\.synopsis)
        return (["nimbusctl", name] + (optionsFirst ? options + arguments : arguments + options)).joined(separator: " ")
    }

    func option(named spelling: String) -> OptionSpec? {
        options.first { $0.spellings.contains(spelling) }
    }
}
