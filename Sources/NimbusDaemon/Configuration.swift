import NimbusProtocol

/// Every setting of one `nimbusd` instance, resolved: built-in defaults, then the config
/// file, then command-line flags (DESIGN §8). Paths are absolute and normalized; sizes are
/// bytes; durations are nanoseconds. Built by `DaemonArguments.resolve`.
///
/// To add a setting: add the field here (or to `PairSettings`, if the running pair uses it)
/// with its default, and one line to `ConfigSetting.all`; the config parser, the flag parser
/// (if it has a flag), `--help` and the tests pick it up from there. `configuration.quietPeriod`
/// reads `settings.quietPeriod`.
@dynamicMemberLookup
public struct Configuration: Equatable, Sendable {
    public enum Mode: String, Sendable, CaseIterable {
        /// New cloud files are downloaded.
        case mirror
        /// New cloud files appear as placeholders (DESIGN §5).
        case onDemand = "on-demand"
    }

    /// `[placeholders] style` (DESIGN §5): `auto` writes real-name placeholders wherever the
    /// kernel, the daemon's privilege and the local filesystem allow them, else suffix ones.
    public enum PlaceholderStyleChoice: String, Sendable, CaseIterable {
        case auto
        case realName = "real-name"
        case suffix
    }

    public enum CloudWatch: String, Sendable, CaseIterable {
        case inotify
        /// For network mounts, where other machines' changes raise no inotify events.
        case poll
    }

    // [pair]
    public var localRoot: String
    public var cloudRoot: String
    /// True while the root is the embedded default of DESIGN §8 (nothing configured it). Only
    /// then may the daemon create the folder: a configured root that is missing may be an
    /// unmounted disk, and creating it would sync into the wrong filesystem.
    public var localRootIsDefault = true
    public var cloudRootIsDefault = true
    public var usesEmbeddedDefaults: Bool { localRootIsDefault && cloudRootIsDefault }

    // Identity and files (flags only: the config file is chosen by the instance).
    public var instance: String
    /// The config file actually read, or nil if there was none.
    public var configFile: String?
    public var socketPath: String
    public var stateDirectory: String

    // [device], [log]
    /// Appears in conflict copies: "name (conflict from DEVICE …)". Defaults to the hostname.
    public var deviceName: String
    public var logLevel: Logger.Level = .info

    // [desktop]
    /// Desktop notifications over the session bus (none without one).
    public var notifications = true

    // [placeholders]
    public var placeholderStyle: PlaceholderStyleChoice = .auto

    // [watch]
    public var cloudWatch: CloudWatch = .inotify

    /// The rest: what the running pair uses as it is (mode, placeholders, cache, safety,
    /// versions, intervals).
    public var settings = PairSettings.defaults

    public init(instance: String, localRoot: String, cloudRoot: String, socketPath: String,
                stateDirectory: String, deviceName: String) {
        self.instance = instance
        self.localRoot = localRoot
        self.cloudRoot = cloudRoot
        self.socketPath = socketPath
        self.stateDirectory = stateDirectory
        self.deviceName = deviceName
    }

    public subscript<Value>(dynamicMember setting: WritableKeyPath<PairSettings, Value>) -> Value {
        get { settings[keyPath: setting] }
        set { settings[keyPath: setting] = newValue }
    }
}

/// Where a value came from, which decides how relative paths are read and how errors look.
struct ValueContext {
    enum Origin { case file, flag }
    var origin: Origin
    var environment: [String: String]
    var currentDirectory: String
}

/// A value that does not parse; the message says what was expected.
struct ValueProblem: Error {
    var message: String

    static func expected(_ expectation: String, got text: String, suggestion: String? = nil) -> ValueProblem {
        var message = "expected \(expectation), got \"\(text)\""
        if let suggestion { message += "; did you mean \(suggestion)?" }
        if text.contains(" #") || text.contains(" ;") { message += " (comments must be on a line of their own)" }
        return ValueProblem(message: message)
    }
}

/// A configuration mistake: exit status 78 (`EX_CONFIG`). The description is one line, e.g.
/// `/home/u/.config/nimbus/default.conf:12: [cache] cache-limit: expected a size such as 10G or 512M, got "ten gigs"`.
public struct ConfigurationError: LaunchError, Equatable {
    public enum Kind: Sendable, Equatable {
        case unknownSection, unknownKey, badValue, duplicateKey, keyOutsideSection, malformedLine, notUTF8
        /// The file given with `--config` does not exist.
        case missingFile
        case unreadable
        /// The settings are each valid but do not make sense together, or a location cannot
        /// be worked out (no `HOME`).
        case inconsistent
    }

    public var kind: Kind
    public var file: String?
    public var line: Int?
    public var section: String?
    public var key: String?
    public var message: String

    public init(kind: Kind, file: String? = nil, line: Int? = nil, section: String? = nil, key: String? = nil, message: String) {
        self.kind = kind
        self.file = file
        self.line = line
        self.section = section
        self.key = key
        self.message = message
    }

    public var exitCode: Int32 { 78 }

    public var description: String {
        var text = ""
        if let file { text += line.map { "\(file):\($0): " } ?? "\(file): " }
        switch (section, key) {
        case let (section?, key?): text += "[\(section)] \(key): "
        case let (section?, nil): text += "[\(section)]: "
        case let (nil, key?): text += "\(key): "
        case (nil, nil): break
        }
        return text + message
    }
}

/// Builds a `Configuration` from parsed flags. Precedence: built-in defaults, then the
/// config file, then flags. The instance, the config file, the socket and the state
/// directory come from flags only (the config file is found through the instance).
struct ConfigurationLoader {
    let arguments: DaemonArguments
    let environment: [String: String]
    let currentDirectory: String
    let hostname: String
    let uid: UInt32

    func load(readFile: (String) throws -> [UInt8]?) throws -> Configuration {
        let instance = arguments.instance ?? Locations.defaultInstance
        do { try Locations.validateInstanceName(instance) } catch {
            throw UsageError(kind: .badValue, message: "--instance: \(error)")
        }
        // Missing defaults (no HOME) stay empty and are reported only if nothing replaces them.
        var configuration = Configuration(
            instance: instance,
            localRoot: (try? Locations.defaultLocalFolder(environment: environment)) ?? "",
            cloudRoot: (try? Locations.defaultCloudFolder(environment: environment)) ?? "",
            socketPath: try socketPath(instance),
            stateDirectory: try stateDirectory(instance),
            deviceName: ConfigSetting.validDeviceName(hostname) ?? "nimbus")
        let settings = ConfigSetting.all
        if let (path, bytes) = try readConfigFile(instance, readFile) {
            configuration.configFile = path
            let context = ValueContext(origin: .file, environment: environment, currentDirectory: currentDirectory)
            for entry in try ConfigFile.parse(bytes, path: path, schema: ConfigSetting.schema).entries {
                guard let setting = settings.first(where: { $0.section == entry.section && $0.key == entry.key }) else { continue }
                do { try setting.apply(entry.value, context, &configuration) } catch let problem as ValueProblem {
                    throw ConfigurationError(kind: .badValue, file: path, line: entry.line, section: entry.section,
                                             key: entry.key, message: problem.message)
                }
            }
        }
        let context = ValueContext(origin: .flag, environment: environment, currentDirectory: currentDirectory)
        for flag in arguments.settings {
            guard let setting = settings.first(where: { $0.flag == flag.name }) else { continue }
            do { try setting.apply(flag.value, context, &configuration) } catch let problem as ValueProblem {
                throw UsageError(kind: .badValue, message: "\(flag.name): \(problem.message)")
            }
        }
        try check(configuration)
        return configuration
    }

    /// A path given as a flag: `~` expanded, relative to the current directory.
    func flagPath(_ flag: String, _ value: String) throws(UsageError) -> String {
        do { return try Locations.absolutePath(value, currentDirectory: currentDirectory, environment: environment) } catch {
            throw UsageError(kind: .badValue, message: "\(flag): \(error)")
        }
    }

    func socketPath(_ instance: String) throws -> String {
        if let given = arguments.socketPath { return try flagPath("--socket", given) }
        return try Locations.socketPath(instance: instance, environment: environment, uid: uid)
    }

    func stateDirectory(_ instance: String) throws -> String {
        if let given = arguments.stateDirectory { return try flagPath("--state-dir", given) }
        do { return try Locations.stateDirectory(instance: instance, environment: environment) } catch {
            throw ConfigurationError(kind: .inconsistent, message: "cannot place the state directory: \(error); give --state-dir DIR")
        }
    }

    /// `--config FILE` must exist; the default file is optional (and there is none to look
    /// for when HOME is unset).
    func readConfigFile(_ instance: String, _ readFile: (String) throws -> [UInt8]?) throws -> (String, [UInt8])? {
        func read(_ path: String) throws(ConfigurationError) -> [UInt8]? {
            do { return try readFile(path) } catch {
                throw ConfigurationError(kind: .unreadable, file: path, message: "cannot read the config file: \(error)")
            }
        }
        if let given = arguments.configFile {
            let path = try flagPath("--config", given)
            guard let bytes = try read(path) else {
                throw ConfigurationError(kind: .missingFile, file: path, message: "no such file (given with --config)")
            }
            return (path, bytes)
        }
        guard let path = try? Locations.configFile(instance: instance, environment: environment) else { return nil }
        return try read(path).map { (path, $0) }
    }

    /// Settings that are each valid but unsafe together.
    func check(_ configuration: Configuration) throws(ConfigurationError) {
        func fail(_ message: String) -> ConfigurationError { ConfigurationError(kind: .inconsistent, message: message) }
        for (name, root, flag) in [("local", configuration.localRoot, "--local"), ("cloud", configuration.cloudRoot, "--cloud")]
        where root.isEmpty {
            throw fail("no \(name) folder: HOME is not set to an absolute path, so the default cannot be used; give \(flag) DIR or set \(name) in [pair]")
        }
        let local = configuration.localRoot, cloud = configuration.cloudRoot
        if local == cloud {
            throw fail("the local and cloud folders are the same folder (\(local)); choose two separate folders")
        }
        // Syncing a folder into itself would copy its own copies forever.
        if Locations.isSameOrInside(cloud, local) {
            throw fail("the cloud folder \(cloud) is inside the local folder \(local); choose two separate folders")
        }
        if Locations.isSameOrInside(local, cloud) {
            throw fail("the local folder \(local) is inside the cloud folder \(cloud); choose two separate folders")
        }
        // A journal inside a synced folder would be synced, and each sync would write it again.
        for (name, root) in [("local", local), ("cloud", cloud)] where Locations.isSameOrInside(configuration.stateDirectory, root) {
            throw fail("the state directory \(configuration.stateDirectory) is inside the \(name) folder \(root); give --state-dir DIR outside it")
        }
        // sockaddr_un.sun_path holds 108 bytes including the terminating NUL.
        let length = configuration.socketPath.utf8.count
        if length > 107 {
            throw fail("the socket path \(configuration.socketPath) is \(length) bytes long, over the 107 that Unix sockets allow; give a shorter --socket PATH")
        }
    }
}
