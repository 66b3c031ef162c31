import NimbusProtocol

/// `nimbusctl --help` and `nimbusctl COMMAND --help`, laid out like swift-argument-parser's.
enum HelpText {
    static func overview() -> String {
        var commandRows: [String] = []
        for group in Catalogue.groups {
            commandRows.append("  \(group.title):")
            commandRows += twoColumns(group.commands.map { ($0.name, $0.summary) }, indent: 4)
        }
        return """
            OVERVIEW: Control the Nimbus sync daemon (nimbusd): see what it does, fetch files on demand, settle conflicts.

            USAGE: nimbusctl [--instance NAME | --socket PATH] [--json] [--no-color] COMMAND [ARGUMENTS...]

            COMMANDS:
            \(commandRows.joined(separator: "\n"))

              See 'nimbusctl help COMMAND' or 'nimbusctl COMMAND --help' for the options of one.

            OPTIONS:
            \(optionRows(Catalogue.global).joined(separator: "\n"))

            STATES:
              \(StateSymbol.legend)

            PATHS:
              Paths are files or folders inside the synced folder. A relative path is taken from
              the current folder when you are inside the synced folder, else from its root.
              An absolute path must lie inside the synced folder.

            OUTPUT:
              Results go to stdout, errors to stderr, each error with the reason and a suggestion.
              Colour only on a terminal, never with --no-color or NO_COLOR set (no-color.org).
              With --json, stdout gets the command's result object exactly as the protocol
              documents it (Sources/NimbusProtocol/PROTOCOL.md), on one line; 'ls' prints all
              pages as one {"entries": [...]}; commands given several paths print one line per
              path; 'watch' prints one JSON-RPC notification per line. Errors are printed on
              stdout too, as one line:
                {"error": {"name": "...", "code": -32001, "message": "...", "reason": "...",
                           "suggestion": "...", "exitCode": 1}}
              ("code" is the JSON-RPC code; absent for errors found by nimbusctl itself).

            EXIT STATUS:
              0   success
              1   the operation failed (the daemon said why); for 'status': the daemon runs, but
                  something needs you (held deletions, conflicts, errors, a pause, a missing folder,
                  a journal that cannot be written)
              64  usage error: the command line is wrong
              69  the daemon is not reachable (start it: systemctl --user start nimbusd, or nimbusd)

            ENVIRONMENT:
              NO_COLOR         any non-empty value turns colour off
              XDG_RUNTIME_DIR  where the daemon's socket is: $XDG_RUNTIME_DIR/nimbus/INSTANCE.sock

            nimbusctl \(NimbusVersion.string)
            """
    }

    static func command(_ spec: CommandSpec) -> String {
        var sections = ["OVERVIEW: \(spec.summary).", "USAGE: \(spec.usage)"]
        if !spec.discussion.isEmpty {
            sections.append(spec.discussion.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
        }
        if !spec.arguments.isEmpty {
            let rows = spec.arguments.map { argument in
                (argument.synopsis, argument.help + UsageError.choicesText(argument.choices))
            }
            sections.append("ARGUMENTS:\n" + twoColumns(rows, indent: 2).joined(separator: "\n"))
        }
        if !spec.options.isEmpty {
            sections.append("OPTIONS:\n" + optionRows(spec.options).joined(separator: "\n"))
        }
        // A command's own option hides a global one of the same name (restore --version).
        let global = Catalogue.global.filter { g in !spec.options.contains { $0.long == g.long } }
        sections.append("GLOBAL OPTIONS:\n" + optionRows(global).joined(separator: "\n"))
        if !spec.examples.isEmpty {
            sections.append("EXAMPLES:\n" + spec.examples.map { "  " + $0 }.joined(separator: "\n"))
        }
        return sections.joined(separator: "\n\n")
    }

    static func optionRows(_ options: [OptionSpec]) -> [String] {
        twoColumns(options.map { ($0.synopsis, $0.help) }, indent: 2)
    }

    /// Names padded to one column, then their text.
    static func twoColumns(_ rows: [(String, String)], indent: Int) -> [String] {
        let width = max(22, (rows.map(\.0.count).max() ?? 0) + 2)
        let pad = String(repeating: " ", count: indent)
        return rows.map { name, text in
            pad + name + String(repeating: " ", count: width - name.count) + text
        }
    }
}
