import NimbusProtocol

/// What `nimbusd` was asked to do.
public enum DaemonLaunch: Equatable, Sendable {
    case run(Configuration)
    /// Print this text to stdout and exit 0.
    case help(String)
    /// Print this text to stdout and exit 0.
    case version(String)
}

/// A reason not to start, with the exit status to use (sysexits.h). `description` is one
/// plain-English line for stderr.
public protocol LaunchError: Error, CustomStringConvertible {
    var exitCode: Int32 { get }
}

/// A mistake on the command line: exit status 64 (`EX_USAGE`).
public struct UsageError: LaunchError, Equatable {
    public enum Kind: Sendable, Equatable {
        case unknownOption, missingValue, unexpectedValue, badValue, repeatedOption, strayArgument
    }

    public var kind: Kind
    /// What was wrong, without the pointer to `--help`.
    public var message: String
    public var exitCode: Int32 { 64 }
    public var description: String {
        message.hasSuffix("?") ? message + " Try 'nimbusd --help'." : message + "; try 'nimbusd --help'"
    }

    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }
}

/// The command line of `nimbusd` (DESIGN §8), parsed by hand: `--flag value` and
/// `--flag=value`. Flags that set a config key come from `ConfigSetting.all`; the others
/// choose the instance and its files.
public struct DaemonArguments: Equatable {
    public var instance: String?
    public var configFile: String?
    public var socketPath: String?
    public var stateDirectory: String?
    /// Config settings given as flags, in command-line order: (flag, value).
    public var settings: [Flag] = []
    public var wantsHelp = false
    public var wantsVersion = false

    public struct Flag: Equatable, Sendable {
        public var name: String
        public var value: String
    }

    /// Options that are not config settings.
    enum LaunchOption: CaseIterable {
        case instance, config, socket, stateDirectory, version, help

        var spelling: String {
            switch self {
            case .instance: "--instance"
            case .config: "--config"
            case .socket: "--socket"
            case .stateDirectory: "--state-dir"
            case .version: "--version"
            case .help: "--help"
            }
        }

        var metavar: String? {
            switch self {
            case .instance: "NAME"
            case .config: "FILE"
            case .socket: "PATH"
            case .stateDirectory: "DIR"
            case .version, .help: nil
            }
        }
    }

    /// The entry point: from `argv` (without the program name) and the process's
    /// surroundings to what to do. `readFile` returns a file's bytes, or nil if it does not
    /// exist; it is only called for the config file. Throws `UsageError` (exit 64) or
    /// `ConfigurationError` (exit 78). Call it again on SIGHUP to reload.
    public static func resolve(arguments: [String], environment: [String: String], currentDirectory: String,
                               hostname: String, uid: UInt32,
                               readFile: (String) throws -> [UInt8]?) throws -> DaemonLaunch {
        let beforeTerminator = arguments.prefix { $0 != "--" }
        if beforeTerminator.contains(where: { $0 == "--help" || $0 == "-h" }) {
            // Help is shown even next to a mistake; it still honours a valid --instance.
            let instance = (try? parse(arguments))?.instance
            return .help(helpText(instance: instance, environment: environment, hostname: hostname, uid: uid))
        }
        if beforeTerminator.contains("--version") { return .version("nimbusd \(NimbusVersion.string)") }
        let parsed = try parse(arguments)
        return .run(try ConfigurationLoader(arguments: parsed, environment: environment, currentDirectory: currentDirectory,
                                            hostname: hostname, uid: uid).load(readFile: readFile))
    }

    /// Parses the flags without interpreting their values (that needs the environment).
    public static func parse(_ arguments: [String]) throws(UsageError) -> DaemonArguments {
        var result = DaemonArguments()
        var given: [String: String] = [:]
        let settingFlags = ConfigSetting.all.compactMap(\.flag)
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                if index < arguments.count { throw stray(arguments[index]) }
                break
            }
            guard argument.hasPrefix("-"), argument != "-" else { throw stray(argument) }
            let (name, inline) = split(argument)
            let option = LaunchOption.allCases.first { $0.spelling == name } ?? (name == "-h" ? .help : nil)
            guard option != nil || settingFlags.contains(name) else { throw unknown(name) }
            if let option, option.metavar == nil {
                guard inline == nil else { throw UsageError(kind: .unexpectedValue, message: "\(name) takes no value") }
                if option == .help { result.wantsHelp = true } else { result.wantsVersion = true }
                continue
            }
            var value: String
            if let inline {
                value = inline
            } else {
                // A following option means the value was forgotten; `--flag=-x` still works.
                guard index < arguments.count, !arguments[index].hasPrefix("-") || arguments[index] == "-" else {
                    throw UsageError(kind: .missingValue, message: "\(name) needs a value (\(metavar(name)))")
                }
                value = arguments[index]
                index += 1
            }
            guard !value.isEmpty else {
                throw UsageError(kind: .missingValue, message: "\(name) needs a value (\(metavar(name))), got an empty one")
            }
            if let earlier = given[name] {
                throw UsageError(kind: .repeatedOption, message: "\(name) is given twice (\"\(earlier)\" and \"\(value)\"); give it once")
            }
            given[name] = value
            switch option {
            case .instance?: result.instance = value
            case .config?: result.configFile = value
            case .socket?: result.socketPath = value
            case .stateDirectory?: result.stateDirectory = value
            default: result.settings.append(Flag(name: name, value: value))
            }
        }
        return result
    }

    static func split(_ argument: String) -> (name: String, value: String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }

    static func metavar(_ flag: String) -> String {
        LaunchOption.allCases.first { $0.spelling == flag }?.metavar
            ?? ConfigSetting.all.first { $0.flag == flag }?.metavar ?? "VALUE"
    }

    static func stray(_ argument: String) -> UsageError {
        UsageError(kind: .strayArgument,
                   message: "unexpected argument \"\(argument)\": nimbusd takes only options (the folders are --local DIR and --cloud DIR)")
    }

    static func unknown(_ name: String) -> UsageError {
        let spellings = ConfigSetting.all.compactMap(\.flag) + LaunchOption.allCases.map(\.spelling) + ["-h"]
        var message = "unknown option \(name)"
        if let suggestion = Spelling.closest(to: name, among: spellings) {
            message += "; did you mean \(suggestion)?"
        } else if case let key = String(name.drop { $0 == "-" }),
                  let setting = ConfigSetting.all.first(where: { $0.key == key || "\($0.section)-\($0.key)" == key }) {
            message += "; \(setting.key) is set in the [\(setting.section)] section of the config file"
        }
        return UsageError(kind: .unknownOption, message: message)
    }
}

extension DaemonArguments {
    /// `nimbusd --help`: synopsis, every option with its default, and the files of the
    /// instance, worked out from this environment so that the paths shown are the real ones.
    static func helpText(instance: String?, environment: [String: String], hostname: String, uid: UInt32) -> String {
        let instance = instance.flatMap { name in (try? Locations.validateInstanceName(name)) != nil ? name : nil }
            ?? Locations.defaultInstance
        let local = (try? Locations.defaultLocalFolder(environment: environment)) ?? "~/Nimbus"
        let cloud = (try? Locations.defaultCloudFolder(environment: environment)) ?? "$XDG_DATA_HOME/nimbus/cloud"
        let config = (try? Locations.configFile(instance: instance, environment: environment))
            ?? "$XDG_CONFIG_HOME/nimbus/\(instance).conf"
        let state = (try? Locations.stateDirectory(instance: instance, environment: environment))
            ?? "$XDG_STATE_HOME/nimbus/\(instance)"
        let socket = (try? Locations.socketPath(instance: instance, environment: environment, uid: uid))
            ?? Locations.socketDirectory(environment: environment, uid: uid) + "/\(instance).sock"
        let defaults = Configuration(instance: instance, localRoot: local, cloudRoot: cloud, socketPath: socket,
                                     stateDirectory: state, deviceName: hostname)

        var rows: [(String, String)] = []
        for setting in ConfigSetting.all {
            guard let flag = setting.flag else { continue }
            let shown = flag == "--device-name" ? "the hostname, \(hostname)" : setting.render(defaults)
            rows.append(("\(flag) \(setting.metavar)", "\(setting.summary) (default: \(shown))"))
        }
        rows += [
            ("--instance NAME", "run a separate daemon with its own config, state and socket (default: \(Locations.defaultInstance))"),
            ("--config FILE", "read settings from FILE, which must exist (default: \(config), if it exists)"),
            ("--socket PATH", "the control socket that nimbusctl connects to (default: \(socket))"),
            ("--state-dir DIR", "where the journal is kept (default: \(state))"),
            ("--version", "print the version and exit"),
            ("-h, --help", "print this help and exit"),
        ]
        let files = [(config, "settings, INI style (see man nimbus.conf)"), (state + "/", "journal and state"),
                     (socket, "control socket")]

        return """
            Usage: nimbusd [OPTION]...
            Keep a local folder and a cloud folder in two-way sync.

            With no options and no config file, nimbusd syncs \(local)
            with \(cloud), creating both folders.
            A configured local folder is created (with its parents) when the pair never
            synced; a configured cloud folder is never created: one that does not exist ends
            a first pairing (exit 66), and a folder of a pair that synced before is waited for
            (an unmounted disk comes back). One daemon per local folder.
            Options may be written --option VALUE or --option=VALUE.

            Options:
            \(columns(rows))

            Settings come from built-in defaults, then the config file, then these options.

            Files (instance "\(instance)"):
            \(columns(files))

            Exit status: 0 on success; 64 a usage error; 66 the cloud folder does not exist and
            the pair never synced; 73 the state directory, journal, local folder or control
            socket cannot be created; 75 another nimbusd syncs this local folder (it is named);
            78 a configuration error (a folder that is a file included).
            See man nimbusd and man nimbus.conf; control a running daemon with nimbusctl (nimbusctl --help).
            """
    }

    /// Two columns, the second aligned, indented by two spaces.
    static func columns(_ rows: [(String, String)]) -> String {
        let width = rows.map(\.0.count).max()! + 2
        return rows.map { "  " + $0.0 + String(repeating: " ", count: width - $0.0.count) + $0.1 }.joined(separator: "\n")
    }
}
