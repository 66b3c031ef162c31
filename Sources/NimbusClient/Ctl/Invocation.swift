/// What the user asked for, once the command line is parsed and checked. Paths are still as
/// written: turning them into protocol paths needs the daemon's local root.
struct Invocation: Equatable, Sendable {
    var global = GlobalOptions()
    var command: Command
}

struct GlobalOptions: Equatable, Sendable {
    var instance: String?
    var socket: String?
    var json = false
    var noColor = false

    /// The options that chose the daemon, to repeat in commands printed for pasting.
    var reach: [String] {
        if let socket { return ["--socket", socket] }
        if let instance { return ["--instance", instance] }
        return []
    }
}

enum Command: Equatable, Sendable {
    case status
    case list(path: String?, recursive: Bool, state: String?)
    case info(path: String)
    case download(paths: [String], wait: Bool)
    case open(path: String)
    case evict(paths: [String])
    case pin(paths: [String])
    case unpin(paths: [String])
    case conflicts
    case resolve(path: String, keep: String)
    /// `versions PATH`, or `versions --all [PATH]`: every version kept (below PATH).
    case versions(path: String?, all: Bool)
    /// `restore PATH [--version ID] [--to PATH] [--at TIME] [--dry-run]`: a file or a folder.
    case restore(path: String, version: String?, to: String?, at: String? = nil, dryRun: Bool = false)
    case prune
    case pause
    case resume
    case rescan
    case confirmDeletes
    case revertDeletes
    case watch
    /// `lock [--shared] [--wait SECONDS] PATH -- COMMAND [ARGS...]`.
    case lock(path: String, shared: Bool, wait: Double?, command: [String])
    case locks
    case completion(shell: String)
    /// `--help`, `-h` or `help [COMMAND]`; nil topic: the overview.
    case help(topic: String?)
    case version

    /// Whether running it needs the daemon.
    var needsDaemon: Bool {
        switch self {
        case .completion, .help, .version: false
        default: true
        }
    }
}

/// The raw result of parsing one command's words, before it becomes a `Command`.
struct ParsedWords {
    var spec: CommandSpec
    var flags: Set<String> = []
    var values: [String: String] = [:]
    var positionals: [String] = []

    func flag(_ long: String) -> Bool { flags.contains(long) }
    func value(_ long: String) -> String? { values[long] }
    var first: String { positionals[0] }
}

extension Command {
    /// Builds the command from checked words (counts and choices already validated).
    init(_ words: ParsedWords) {
        let p = words.positionals
        switch words.spec.name {
        case "status": self = .status
        case "ls": self = .list(path: p.first, recursive: words.flag("recursive"), state: words.value("state"))
        case "info": self = .info(path: words.first)
        case "download": self = .download(paths: p, wait: !words.flag("no-wait"))
        case "open": self = .open(path: words.first)
        case "evict": self = .evict(paths: p)
        case "pin": self = .pin(paths: p)
        case "unpin": self = .unpin(paths: p)
        case "conflicts": self = .conflicts
        case "resolve": self = .resolve(path: words.first, keep: words.value("keep")!)
        case "versions": self = .versions(path: p.first, all: words.flag("all"))
        case "restore": self = .restore(path: words.first, version: words.value("version"), to: words.value("to"),
                                        at: words.value("at"), dryRun: words.flag("dry-run"))
        case "prune": self = .prune
        case "pause": self = .pause
        case "resume": self = .resume
        case "rescan": self = .rescan
        case "confirm-deletes": self = .confirmDeletes
        case "revert-deletes": self = .revertDeletes
        case "watch": self = .watch
        case "lock": self = LockCommand.command(words)
        case "locks": self = .locks
        case "completion": self = .completion(shell: words.first)
        case "help": self = .help(topic: p.first)
        default: preconditionFailure("the catalogue names a command with no case: \(words.spec.name)")
        }
    }
}
