import FoundationEssentials

/// `nimbusctl completion bash|zsh|fish`: scripts generated from the `Catalogue`, so every
/// command, option and choice the parser knows is completed, and nothing else.
enum Completions {
    static func script(for shell: String) -> String {
        switch shell {
        case "bash": bash()
        case "zsh": zsh()
        default: fish()
        }
    }

    static var commandNames: [String] { Catalogue.commands.map(\.name) }

    /// The words to offer for an argument or an option value: its choices, command names for
    /// `help`, or nil when files should be offered (or nothing, for a free value).
    static func words(choices: [String], name: String) -> [String] {
        name == "COMMAND" ? commandNames : choices
    }

    // MARK: bash

    static func bash() -> String {
        let globalWords = Catalogue.global.flatMap(\.spellings).joined(separator: " ")
        var cases: [String] = []
        for command in Catalogue.commands {
            var lines: [String] = []
            let valueOptions = command.options.filter(\.takesValue)
            if !valueOptions.isEmpty {
                lines.append("            case \"$prev\" in")
                for option in valueOptions {
                    lines.append("                \(option.spellings.joined(separator: "|"))) \(bashValue(option.choices, files: option.completesFiles)); return ;;")
                }
                lines.append("            esac")
            }
            // The command's options, then the global ones it does not shadow (restore --version).
            let global = Catalogue.global.filter { g in !command.options.contains { $0.long == g.long } }
            let optionWords = (command.options + global).flatMap(\.spellings).joined(separator: " ")
            lines.append("            opts=\"\(optionWords)\"")
            if let argument = command.arguments.first {
                let choices = words(choices: argument.choices, name: argument.name)
                lines.append(choices.isEmpty ? (argument.completesFiles ? "            files=1" : "")
                                             : "            args=\"\(choices.joined(separator: " "))\"")
            }
            cases.append("        \(command.name))\n" + lines.filter { !$0.isEmpty }.joined(separator: "\n") + "\n            ;;")
        }
        return """
            # bash completion for nimbusctl. Install:
            #   nimbusctl completion bash > ~/.local/share/bash-completion/completions/nimbusctl
            _nimbusctl() {
                local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
                local commands="\(commandNames.joined(separator: " "))"
                local global="\(globalWords)"
                local cmd="" opts="" args="" files=0 i
                # The command is the first word that is neither an option nor an option's value.
                for ((i = 1; i < COMP_CWORD; i++)); do
                    case "${COMP_WORDS[i]}" in
                        --instance|--socket) i=$((i + 1)) ;;
                        -*) ;;
                        *) cmd="${COMP_WORDS[i]}"; break ;;
                    esac
                done
                case "$prev" in
                    --socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
                    --instance) COMPREPLY=(); return ;;
                esac
                case "$cmd" in
                    "") COMPREPLY=($(compgen -W "$commands $global" -- "$cur")); return ;;
            \(cases.joined(separator: "\n"))
                esac
                if [[ "$cur" == -* ]]; then
                    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
                elif [[ -n "$args" ]]; then
                    COMPREPLY=($(compgen -W "$args" -- "$cur"))
                elif [[ "$files" == 1 ]]; then
                    COMPREPLY=($(compgen -f -- "$cur"))
                fi
            }
            complete -o filenames -F _nimbusctl nimbusctl

            """
    }

    static func bashValue(_ choices: [String], files: Bool) -> String {
        if !choices.isEmpty { return "COMPREPLY=($(compgen -W \"\(choices.joined(separator: " "))\" -- \"$cur\"))" }
        return files ? "COMPREPLY=($(compgen -f -- \"$cur\"))" : "COMPREPLY=()"
    }

    // MARK: zsh

    static func zsh() -> String {
        let descriptions = Catalogue.commands.map { "        '\($0.name):\(zshEscape($0.summary))'" }
        var cases: [String] = []
        for command in Catalogue.commands {
            var specs = command.options.map(zshOption)
            for (position, argument) in command.arguments.enumerated() {
                let choices = words(choices: argument.choices, name: argument.name)
                let action = !choices.isEmpty ? "(\(choices.joined(separator: " ")))" : argument.completesFiles ? "_files" : " "
                let label = argument.name.lowercased()
                switch argument.count {
                case .one: specs.append("'\(position + 1):\(label):\(action)'")
                case .optional: specs.append("'\(position + 1)::\(label):\(action)'")
                case .oneOrMore: specs.append("'*:\(label):\(action)'")
                }
            }
            cases.append("                \(command.name)) _arguments -s $global \(specs.joined(separator: " ")) ;;")
        }
        let global = Catalogue.global.map { "        " + zshOption($0) }
        return """
            #compdef nimbusctl
            # zsh completion for nimbusctl. Install:
            #   nimbusctl completion zsh > "${fpath[1]}/_nimbusctl"
            _nimbusctl() {
                local context state state_descr line
                typeset -A opt_args
                local -a commands global
                commands=(
            \(descriptions.joined(separator: "\n"))
                )
                global=(
            \(global.joined(separator: "\n"))
                )
                _arguments -C $global '1: :->command' '*:: :->args' && return
                case $state in
                    command) _describe -t commands 'nimbusctl command' commands ;;
                    args)
                        case $words[1] in
            \(cases.joined(separator: "\n"))
                        esac
                        ;;
                esac
            }
            if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
                _nimbusctl "$@"
            else
                compdef _nimbusctl nimbusctl
            fi

            """
    }

    static func zshOption(_ option: OptionSpec) -> String {
        let help = "[\(zshEscape(option.help))]"
        var value = ""
        if let name = option.value {
            let action = !option.choices.isEmpty ? "(\(option.choices.joined(separator: " ")))" : option.completesFiles ? "_files" : " "
            value = ":\(name.lowercased()):\(action)"
        }
        guard let short = option.short else { return "'\(option.spelling)\(help)\(value)'" }
        return "'(-\(short) \(option.spelling))'{-\(short),\(option.spelling)}'\(help)\(value)'"
    }

    /// Safe inside a single-quoted zsh word used as an `_arguments` description.
    static func zshEscape(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "'": result += "'\\''"
            case "[", "]", ":", "\\": result += "\\" + String(character)
            default: result.append(character)
            }
        }
        return result
    }

    // MARK: fish

    static func fish() -> String {
        var lines = [
            "# fish completion for nimbusctl. Install:",
            "#   nimbusctl completion fish > ~/.config/fish/completions/nimbusctl.fish",
            "set -l commands \(commandNames.joined(separator: " "))",
            "complete -c nimbusctl -f",
        ]
        for command in Catalogue.commands {
            lines.append("complete -c nimbusctl -n \"not __fish_seen_subcommand_from $commands\" -a \(command.name) -d '\(fishEscape(command.summary))'")
        }
        for option in Catalogue.global {
            lines.append("complete -c nimbusctl" + fishOption(option))
        }
        for command in Catalogue.commands {
            let condition = " -n \"__fish_seen_subcommand_from \(command.name)\""
            for option in command.options {
                lines.append("complete -c nimbusctl" + condition + fishOption(option))
            }
            guard let argument = command.arguments.first else { continue }
            let choices = words(choices: argument.choices, name: argument.name)
            if !choices.isEmpty {
                lines.append("complete -c nimbusctl" + condition + " -x -a \"\(choices.joined(separator: " "))\"")
            } else if argument.completesFiles {
                lines.append("complete -c nimbusctl" + condition + " -F")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func fishOption(_ option: OptionSpec) -> String {
        var text = option.short.map { " -s \($0)" } ?? ""
        text += " -l \(option.long)"
        if option.takesValue {
            if !option.choices.isEmpty {
                text += " -x -a \"\(option.choices.joined(separator: " "))\""
            } else {
                text += option.completesFiles ? " -r -F" : " -x"
            }
        }
        return text + " -d '\(fishEscape(option.help))'"
    }

    static func fishEscape(_ text: String) -> String {
        text.split(separator: "\\", omittingEmptySubsequences: false).joined(separator: "\\\\")
            .split(separator: "'", omittingEmptySubsequences: false).joined(separator: "\\'")
    }
}
