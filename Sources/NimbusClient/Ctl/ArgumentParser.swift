import NimbusProtocol

/// nimbusctl's command line, parsed by hand from the `Catalogue`.
///
/// Accepted forms: `--option VALUE`, `--option=VALUE`, `-r`, short switches bundled (`-rh`),
/// `--` to end the options (so a file may be called `-x`). Global options may come before or
/// after the command; after it, the command's own options win (`restore --version ID`).
/// `--help` anywhere before `--` shows the help of the command, even next to a mistake.
enum ArgumentParser {
    static func parse(_ arguments: [String]) throws(UsageError) -> Invocation {
        if arguments.isEmpty { return Invocation(command: .help(topic: nil)) }
        do {
            return try parseStrictly(arguments)
        } catch {
            // `nimbusctl ls --bogus --help` still deserves the help of ls.
            if let topic = helpTopic(arguments) { return Invocation(command: .help(topic: topic.name)) }
            throw error
        }
    }

    /// The command whose help `--help` asks for, when the words hold `--help` and a command.
    static func helpTopic(_ arguments: [String]) -> CommandSpec? {
        let words = arguments.prefix { $0 != "--" }
        guard words.contains(where: { $0 == "--help" || $0 == "-h" }) else { return nil }
        return words.lazy.compactMap { Catalogue.command(named: $0) }.first
    }

    static func parseStrictly(_ arguments: [String]) throws(UsageError) -> Invocation {
        var state = State()
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let word = arguments[index]
            index += 1
            if optionsEnded || !looksLikeOption(word) {
                try state.take(positional: word)
                continue
            }
            if word == "--" {
                optionsEnded = true
                state.separatorAt = state.words?.positionals.count ?? -1
                continue
            }
            for (name, inline) in try split(word, command: state.words?.spec) {
                let option = try state.resolve(name)
                var value: String?
                if option.takesValue {
                    if let inline {
                        value = inline
                    } else if index < arguments.count, !looksLikeOption(arguments[index]) || looksNegative(arguments[index]) {
                        value = arguments[index]
                        index += 1
                    }
                    guard let value, !value.isEmpty else { throw .missingValue(option, command: state.words?.spec) }
                } else if inline != nil {
                    throw .unexpectedValue(option, command: state.words?.spec)
                }
                try state.apply(option, value: value)
            }
        }
        return try state.finish()
    }

    /// An option is a word that starts with "-" and is more than "-" (which names stdin by
    /// custom, and here is a path).
    static func looksLikeOption(_ word: String) -> Bool {
        word.hasPrefix("-") && word != "-"
    }

    /// "-1", "-0.5", "-2h": a value that is out of range, not an option (no option starts
    /// with a digit), so that the option's own check says what it accepts instead of
    /// "--wait needs a value".
    static func looksNegative(_ word: String) -> Bool {
        guard word.hasPrefix("-"), let next = word.dropFirst().first else { return false }
        return next.isASCII && (next.isNumber || next == ".")
    }

    /// `--state=x` → [("--state", "x")]; `-rh` → [("-r", nil), ("-h", nil)].
    static func split(_ word: String, command: CommandSpec?) throws(UsageError) -> [(String, String?)] {
        if word.hasPrefix("--") {
            guard let equals = word.firstIndex(of: "=") else { return [(word, nil)] }
            return [(String(word[..<equals]), String(word[word.index(after: equals)...]))]
        }
        let letters = word.dropFirst()
        guard letters.count > 1 else { return [(word, nil)] }
        // A bundle is only switches; anything else is reported as written.
        let names = letters.map { "-\($0)" }
        let known = (command?.options ?? []) + Catalogue.global
        guard names.allSatisfy({ name in known.contains { $0.spellings.contains(name) && !$0.takesValue } }) else {
            throw .unknownOption(word, command: command)
        }
        return names.map { ($0, nil) }
    }

    /// What has been read so far.
    struct State {
        var global = GlobalOptions()
        var words: ParsedWords?
        var wantsHelp = false
        var wantsVersion = false
        var seen: Set<String> = []
        /// How many of the command's arguments came before `--` (-1: `--` before the command).
        var separatorAt: Int?

        /// The command's own option first, then a global one.
        func resolve(_ name: String) throws(UsageError) -> OptionSpec {
            if let own = words?.spec.option(named: name) { return own }
            if let global = Catalogue.globalOption(named: name) { return global }
            throw .unknownOption(name, command: words?.spec)
        }

        mutating func take(positional word: String) throws(UsageError) {
            guard var words else {
                guard let spec = Catalogue.command(named: word) else { throw .unknownCommand(word) }
                self.words = ParsedWords(spec: spec)
                return
            }
            let spec = words.spec
            let capacity = spec.arguments.contains { $0.count == .oneOrMore } ? Int.max : spec.arguments.count
            guard words.positionals.count < capacity else { throw .extraArgument(word, command: spec) }
            words.positionals.append(word)
            self.words = words
        }

        mutating func apply(_ option: OptionSpec, value: String?) throws(UsageError) {
            let isOwn = words?.spec.options.contains(option) ?? false
            let key = (isOwn ? "" : "global ") + option.long
            if let value {
                guard !seen.contains(key) else { throw .repeated(option, command: words?.spec) }
                seen.insert(key)
                let checked = try ArgumentParser.choose(value, for: option.spelling, among: option.choices,
                                                        command: words?.spec)
                if isOwn { words!.values[option.long] = checked } else { try setGlobal(option, checked) }
            } else if isOwn {
                words!.flags.insert(option.long)
            } else {
                switch option.long {
                case "json": global.json = true
                case "no-color": global.noColor = true
                case "help": wantsHelp = true
                case "version": wantsVersion = true
                default: preconditionFailure("global switch without a case: \(option.long)")
                }
            }
        }

        mutating func setGlobal(_ option: OptionSpec, _ value: String) throws(UsageError) {
            switch option.long {
            case "instance":
                do throws(LocationError) { try Locations.validateInstanceName(value) } catch {
                    throw .invalid("invalid instance name '\(value)'", reason: error.description, command: words?.spec)
                }
                global.instance = value
            case "socket":
                global.socket = value
            default:
                preconditionFailure("global option without a case: \(option.long)")
            }
            if global.instance != nil, global.socket != nil {
                throw .conflicting("--instance", "--socket", command: words?.spec)
            }
        }

        func finish() throws(UsageError) -> Invocation {
            if wantsHelp { return Invocation(global: global, command: .help(topic: words?.spec.name)) }
            if wantsVersion { return Invocation(global: global, command: .version) }
            guard var words else { throw .missingCommand() }
            if words.spec.name == LockCommand.spec.name { try LockCommand.check(words, separatorAt: separatorAt) }
            for option in words.spec.options where option.isRequired && words.values[option.long] == nil {
                throw .missingOption(option, command: words.spec)
            }
            // Positionals fill the arguments in order; a oneOrMore argument is last.
            for (position, argument) in words.spec.arguments.enumerated() {
                if position >= words.positionals.count {
                    if argument.count == .optional { break }
                    throw .missingArgument(argument, command: words.spec)
                }
                let choices = argument.name == "COMMAND" ? Catalogue.commands.map(\.name) : argument.choices
                words.positionals[position] = try ArgumentParser.choose(
                    words.positionals[position], for: argument.name, among: choices, command: words.spec)
            }
            return Invocation(global: global, command: Command(words))
        }
    }

    /// `value` when `choices` is empty, else the choice it names. Case, `-` and `_` are
    /// forgiven: `not-downloaded` and `NOTDOWNLOADED` both mean `notDownloaded`.
    static func choose(_ value: String, for what: String, among choices: [String],
                       command: CommandSpec?) throws(UsageError) -> String {
        guard !choices.isEmpty else { return value }
        func folded(_ s: String) -> String { s.lowercased().filter { $0 != "-" && $0 != "_" } }
        if let match = choices.first(where: { folded($0) == folded(value) }) { return match }
        throw .badChoice(value, for: what, choices: choices, command: command)
    }
}
