/// A mistake on the command line: exit status 64 (`EX_USAGE`). Like every nimbusctl error it says what is
/// wrong (`message`), what was expected (`reason`) and what to type instead (`suggestion`).
struct UsageError: Error, Equatable, Sendable {
    var message: String
    var reason: String
    var suggestion: String

    static func unknownCommand(_ word: String) -> UsageError {
        let names = Catalogue.commands.map(\.name)
        let guess = Spelling.closest(to: word, among: names)
        return UsageError(
            message: "unknown command '\(word)'",
            reason: "expected a command: " + names.joined(separator: ", "),
            suggestion: guess.map { "did you mean '\($0)'? (nimbusctl \($0) --help)" } ?? "see 'nimbusctl --help'")
    }

    static func unknownOption(_ spelling: String, command: CommandSpec?) -> UsageError {
        let own = command?.options ?? []
        let candidates = (own + Catalogue.global).flatMap(\.spellings)
        let guess = Spelling.closest(to: spelling, among: candidates)
        // An option of another command is a common slip: say where it belongs.
        let elsewhere = Catalogue.commands.filter { $0.option(named: spelling) != nil }.map(\.name)
        var suggestion = guess.map { "did you mean '\($0)'?" } ?? ""
        if guess == nil, !elsewhere.isEmpty {
            suggestion = "\(spelling) belongs to " + elsewhere.map { "'nimbusctl \($0)'" }.joined(separator: ", ")
        }
        let help = command.map { "nimbusctl \($0.name) --help" } ?? "nimbusctl --help"
        suggestion += (suggestion.isEmpty ? "see '" : suggestion.hasSuffix("?") ? " See '" : "; see '") + help + "'"
        let expected = own.isEmpty ? "global options only: " : "one of: "
        return UsageError(message: "unknown option '\(spelling)'" + (command.map { " for '\($0.name)'" } ?? ""),
                          reason: "expected " + expected + (own + Catalogue.global).map(\.spelling).joined(separator: ", "),
                          suggestion: suggestion)
    }

    static func missingValue(_ option: OptionSpec, command: CommandSpec?) -> UsageError {
        UsageError(message: "\(option.spelling) needs a value",
                   reason: "expected \(option.spelling) \(option.value ?? "VALUE")" + choicesText(option.choices),
                   suggestion: usageHint(command))
    }

    static func unexpectedValue(_ option: OptionSpec, command: CommandSpec?) -> UsageError {
        UsageError(message: "\(option.spelling) takes no value",
                   reason: "\(option.spelling) is a switch: give it alone, without '='",
                   suggestion: usageHint(command))
    }

    static func badChoice(_ value: String, for what: String, choices: [String], command: CommandSpec?) -> UsageError {
        let guess = Spelling.closest(to: value, among: choices)
        return UsageError(message: "invalid value '\(value)' for \(what)",
                          reason: "expected one of: " + choices.joined(separator: ", "),
                          suggestion: guess.map { "did you mean '\($0)'?" } ?? usageHint(command))
    }

    static func repeated(_ option: OptionSpec, command: CommandSpec?) -> UsageError {
        UsageError(message: "\(option.spelling) is given twice",
                   reason: "\(option.spelling) takes one value",
                   suggestion: "give it once; " + usageHint(command))
    }

    static func missingArgument(_ argument: ArgumentSpec, command: CommandSpec) -> UsageError {
        UsageError(message: "missing \(argument.name) for 'nimbusctl \(command.name)'",
                   reason: "expected \(argument.name): \(argument.help.lowercasedFirst)",
                   suggestion: usageHint(command))
    }

    static func missingOption(_ option: OptionSpec, command: CommandSpec) -> UsageError {
        UsageError(message: "'nimbusctl \(command.name)' needs \(option.spelling)",
                   reason: "expected \(option.usageText): \(option.help.lowercasedFirst)",
                   suggestion: usageHint(command))
    }

    static func extraArgument(_ word: String, command: CommandSpec) -> UsageError {
        let takes = command.arguments.isEmpty ? "takes no arguments"
            : "takes " + command.arguments.map(\.synopsis).joined(separator: " ")
        return UsageError(message: "unexpected argument '\(word)'",
                          reason: "'nimbusctl \(command.name)' \(takes)",
                          suggestion: usageHint(command))
    }

    static func missingCommand() -> UsageError {
        UsageError(message: "no command given",
                   reason: "expected a command, such as status or ls",
                   suggestion: "see 'nimbusctl --help' for the list")
    }

    static func conflicting(_ a: String, _ b: String, command: CommandSpec?) -> UsageError {
        UsageError(message: "\(a) and \(b) cannot be used together",
                   reason: "each names the daemon to talk to",
                   suggestion: "give only one; " + usageHint(command))
    }

    static func invalid(_ message: String, reason: String, command: CommandSpec?) -> UsageError {
        UsageError(message: message, reason: reason, suggestion: usageHint(command))
    }

    static func usageHint(_ command: CommandSpec?) -> String {
        guard let command else { return "see 'nimbusctl --help'" }
        return "usage: \(command.usage) (nimbusctl \(command.name) --help)"
    }

    static func choicesText(_ choices: [String]) -> String {
        choices.isEmpty ? "" : " (one of: " + choices.joined(separator: ", ") + ")"
    }
}

extension String {
    /// "The file" → "the file", for help text reused inside a sentence.
    var lowercasedFirst: String { prefix(1).lowercased() + dropFirst() }
}
