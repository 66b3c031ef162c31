/// Every command and option of nimbusctl (issue #4). Order matters: `nimbusctl --help` lists
/// the commands in this order, grouped as below.
enum Catalogue {
    /// The state names of the protocol (DESIGN §2), which `ls --state` accepts.
    static let stateNames = ["local", "uploading", "notDownloaded", "downloading", "downloaded",
                             "outdated", "conflict", "error"]
    static let shells = ["bash", "zsh", "fish"]
    static let keepChoices = ["local", "cloud", "both"]

    static let global: [OptionSpec] = [
        OptionSpec(long: "instance", value: "NAME",
                   help: "Talk to the daemon of instance NAME (default: default)"),
        OptionSpec(long: "socket", value: "PATH", completesFiles: true,
                   help: "Talk to the daemon listening on the socket PATH"),
        OptionSpec(long: "json", help: "Print results and errors as JSON (see OUTPUT below)"),
        OptionSpec(long: "no-color", help: "Never use colour (also: NO_COLOR=1 in the environment)"),
        OptionSpec(long: "help", short: "h", help: "Show help, for a command too: nimbusctl ls --help"),
        OptionSpec(long: "version", help: "Print the version of nimbusctl and exit"),
    ]

    static func path(_ help: String) -> ArgumentSpec { ArgumentSpec(name: "PATH", count: .one, help: help) }
    static func paths(_ help: String) -> ArgumentSpec { ArgumentSpec(name: "PATH", count: .oneOrMore, help: help) }

    static let groups: [(title: String, commands: [CommandSpec])] = [
        ("Looking", [
            CommandSpec(name: "status", summary: "Show what the daemon is doing",
                        discussion: """
                            The first line names the most urgent thing: a stopped pair (a folder missing), held deletions with the commands that decide, conflicts, errors, a pause; else 'Up to date' or 'Syncing'. Then the folders, counts, the versions store and the last error.
                            Exit status: 0 all in sync (or syncing by itself), 1 something needs you, 69 the daemon is not reachable.
                            """),
            CommandSpec(name: "ls", summary: "List files with their sync state",
                        discussion: "Without PATH: the current folder when it is inside the synced folder, else the synced folder's root.",
                        arguments: [ArgumentSpec(name: "PATH", count: .optional, help: "A folder or a file")],
                        options: [
                            OptionSpec(long: "recursive", short: "r", help: "List everything below PATH, not only its direct entries"),
                            OptionSpec(long: "state", value: "STATE", choices: stateNames,
                                       help: "Only files in STATE: " + stateNames.joined(separator: ", ")),
                        ],
                        examples: ["nimbusctl ls", "nimbusctl ls -r --state conflict", "nimbusctl ls Photos/2024"]),
            CommandSpec(name: "info", summary: "Show everything about one file or folder",
                        arguments: [path("The file or folder")],
                        examples: ["nimbusctl info Documents/report.pdf"]),
            CommandSpec(name: "conflicts", summary: "List files changed on both sides",
                        discussion: "Each conflict keeps both versions: the cloud's under the name, this device's as a conflict copy. Settle one with 'nimbusctl resolve'."),
            CommandSpec(name: "versions", summary: "List the kept previous versions of a file",
                        discussion: "With --all: every version kept, of every file (below PATH if given), and the store's size. Within the retention ([safety] version-retention, 30 days), every version of the last hour is kept, then one an hour for a day, then one a day; [versions] max-size removes the oldest first.",
                        arguments: [ArgumentSpec(name: "PATH", count: .optional, help: "The file (with --all: a folder)")],
                        options: [OptionSpec(long: "all", help: "Every version kept, of every file")],
                        examples: ["nimbusctl versions notes.txt", "nimbusctl versions --all", "nimbusctl versions --all Documents"]),
            CommandSpec(name: "watch", summary: "Print changes as they happen, until interrupted",
                        discussion: "State changes, conflicts, errors, deletions, renames and progress, one line each. With --json, one JSON-RPC notification per line."),
        ]),
        ("Files on demand", [
            CommandSpec(name: "download", summary: "Download files so they are available offline",
                        discussion: "Waits until every file is there, with a progress bar on a terminal.",
                        arguments: [paths("Files or folders")],
                        options: [OptionSpec(long: "no-wait", help: "Start the downloads and return at once")],
                        examples: ["nimbusctl download Videos/talk.mp4", "nimbusctl download --no-wait Photos"]),
            CommandSpec(name: "open", summary: "Download a file if needed, then open it",
                        discussion: "Opens the file with xdg-open. PATH may name the placeholder (report.pdf.nimbus) or the file.",
                        arguments: [path("The file")]),
            CommandSpec(name: "evict", summary: "Free local space, keeping a placeholder",
                        discussion: "Only files in sync and not open are evicted; pinned files never are.",
                        arguments: [paths("Files or folders")]),
            CommandSpec(name: "pin", summary: "Always keep a local copy",
                        arguments: [paths("Files or folders")]),
            CommandSpec(name: "unpin", summary: "Let pinned files be evicted again",
                        arguments: [paths("Files or folders")]),
        ]),
        ("Coordinating", [
            LockCommand.spec,
            CommandSpec(name: "locks", summary: "List the leases held or waited for on paths",
                        discussion: "Leases taken by applications and by 'nimbusctl lock', and the daemon's own locks, oldest first."),
        ]),
        ("Fixing", [
            CommandSpec(name: "resolve", summary: "Settle a conflict",
                        discussion: "local: keep this device's version under the name. cloud: keep the cloud's version (this device's stays among the versions). both: keep both files.",
                        arguments: [path("The file in conflict")],
                        options: [OptionSpec(long: "keep", value: "CHOICE", choices: keepChoices, isRequired: true,
                                             help: "Which version to keep: local, cloud or both")],
                        examples: ["nimbusctl resolve notes.txt --keep both"]),
            CommandSpec(name: "restore", summary: "Bring back a previous version of a file, or a deleted folder",
                        discussion: "The version is copied back into the cloud folder and syncs down like any change; what it replaces is kept as a version. A folder comes back file by file, each as it was at --at (default: its newest version).",
                        arguments: [path("The file or folder")],
                        options: [
                            OptionSpec(long: "version", value: "ID", help: "The version to restore, from 'nimbusctl versions' (default: the newest)"),
                            OptionSpec(long: "to", value: "PATH", completesFiles: true, help: "Restore as PATH instead of over the file"),
                            OptionSpec(long: "at", value: "TIME", help: "As it was at TIME: 2024-03-01 14:30, 2024-03-01T14:30:05.25Z, or 2h (ago)"),
                            OptionSpec(long: "dry-run", help: "Only list what would come back"),
                        ],
                        examples: ["nimbusctl restore notes.txt", "nimbusctl restore notes.txt --version 3 --to notes-old.txt",
                                   "nimbusctl restore Documents --at '2024-03-01 14:30' --dry-run"]),
            CommandSpec(name: "prune", summary: "Apply the versions retention now",
                        discussion: "The daemon also does it by itself after full scans and when the store outgrows [versions] max-size."),
            CommandSpec(name: "confirm-deletes", summary: "Carry out deletions held by the mass-delete guard"),
            CommandSpec(name: "revert-deletes", summary: "Undo deletions held by the mass-delete guard",
                        discussion: "The deleted files are brought back from the other side, and so are those the same mass deletion removed just before the guard held the rest."),
        ]),
        ("Controlling", [
            CommandSpec(name: "pause", summary: "Stop syncing until resumed"),
            CommandSpec(name: "resume", summary: "Sync again after a pause"),
            CommandSpec(name: "rescan", summary: "Compare both folders in full now"),
            CommandSpec(name: "completion", summary: "Print a shell completion script",
                        discussion: """
                            bash: nimbusctl completion bash > ~/.local/share/bash-completion/completions/nimbusctl
                            zsh:  nimbusctl completion zsh > "${fpath[1]}/_nimbusctl"
                            fish: nimbusctl completion fish > ~/.config/fish/completions/nimbusctl.fish
                            """,
                        arguments: [ArgumentSpec(name: "SHELL", count: .one, choices: shells, completesFiles: false,
                                                 help: "bash, zsh or fish")]),
            CommandSpec(name: "help", summary: "Show help for a command",
                        arguments: [ArgumentSpec(name: "COMMAND", count: .optional, completesFiles: false, help: "A command")]),
        ]),
    ]

    static let commands: [CommandSpec] = groups.flatMap(\.commands)

    static func command(named name: String) -> CommandSpec? {
        commands.first { $0.name == name }
    }

    static func globalOption(named spelling: String) -> OptionSpec? {
        global.first { $0.spellings.contains(spelling) }
    }
}
