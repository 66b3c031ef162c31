/// Where Nimbus keeps its files (DESIGN §6–§8).
///
/// Pure: every answer is a function of the environment dictionary and the uid passed in, with
/// no I/O, so that `nimbusd` and `nimbusctl` compute the same paths by construction and tests
/// need no disk. Sources, strongest first:
///
/// - systemd's `CONFIGURATION_DIRECTORY`, `STATE_DIRECTORY`, `RUNTIME_DIRECTORY`, set by the
///   system unit (`ConfigurationDirectory=nimbus` etc.). They may hold a colon-separated list;
///   the first entry is used.
/// - the XDG base directories, with the defaults of the XDG Base Directory specification.
///   Empty or relative values are invalid per the specification and ignored.
/// - `HOME` (must be absolute; a caller that finds it unset may fill it in from the password
///   database before calling, which is I/O and so not done here).
public enum Locations {
    public static let defaultInstance = "default"
    public static let maximumInstanceNameLength = 64
    /// The socket of the system unit (DESIGN §7), which runs with `RuntimeDirectory=nimbus`.
    /// `nimbusctl` runs outside that unit and does not see `RUNTIME_DIRECTORY`, so it needs this
    /// to reach a system daemon.
    public static let systemRuntimeDirectory = "/run/nimbus"

    // MARK: Instance names

    /// Instance names become file names (`<instance>.conf`, `<instance>.sock`), so they are
    /// restricted to `[A-Za-z0-9._-]{1,64}` and may not start with a dot (no hidden files, no
    /// `.` or `..`).
    public static func validateInstanceName(_ name: String) throws(LocationError) {
        func reject(_ reason: String) -> LocationError { .invalidInstanceName(name, reason: reason) }
        if name.isEmpty { throw reject("it is empty") }
        if let bad = name.unicodeScalars.first(where: { !isInstanceCharacter($0) }) {
            throw reject("it contains \(describe(bad))")
        }
        if name.utf8.count > maximumInstanceNameLength {
            throw reject("it is \(name.utf8.count) characters long")
        }
        if name.hasPrefix(".") { throw reject("it starts with '.'") }
    }

    // MARK: Base directories

    /// `HOME`, if set and absolute.
    public static func home(_ environment: [String: String]) -> String? {
        absoluteValue(environment["HOME"])
    }

    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    public static func configHome(_ environment: [String: String]) -> String? {
        xdg("XDG_CONFIG_HOME", orHome: ".config", environment)
    }

    /// `$XDG_STATE_HOME`, else `~/.local/state`.
    public static func stateHome(_ environment: [String: String]) -> String? {
        xdg("XDG_STATE_HOME", orHome: ".local/state", environment)
    }

    /// `$XDG_DATA_HOME`, else `~/.local/share`.
    public static func dataHome(_ environment: [String: String]) -> String? {
        xdg("XDG_DATA_HOME", orHome: ".local/share", environment)
    }

    /// `$XDG_RUNTIME_DIR`; the specification gives it no default.
    public static func runtimeDirectory(_ environment: [String: String]) -> String? {
        absoluteValue(environment["XDG_RUNTIME_DIR"])
    }

    // MARK: Nimbus paths

    /// The embedded default local folder (DESIGN §8): `~/Nimbus`.
    public static func defaultLocalFolder(environment: [String: String]) throws(LocationError) -> String {
        guard let home = home(environment) else { throw .homeNotSet(neededFor: "the default local folder ~/Nimbus") }
        return join(home, "Nimbus")
    }

    /// The embedded default cloud folder (DESIGN §8): `$XDG_DATA_HOME/nimbus/cloud`.
    public static func defaultCloudFolder(environment: [String: String]) throws(LocationError) -> String {
        guard let data = dataHome(environment) else { throw .homeNotSet(neededFor: "the default cloud folder") }
        return join(data, "nimbus/cloud")
    }

    /// `$CONFIGURATION_DIRECTORY/<instance>.conf` (system unit), else
    /// `$XDG_CONFIG_HOME/nimbus/<instance>.conf`.
    public static func configFile(instance: String, environment: [String: String]) throws(LocationError) -> String {
        try validateInstanceName(instance)
        if let system = systemdDirectory("CONFIGURATION_DIRECTORY", environment) {
            return join(system, instance + ".conf")
        }
        guard let config = configHome(environment) else { throw .homeNotSet(neededFor: "the config file") }
        return join(config, "nimbus/\(instance).conf")
    }

    /// `$STATE_DIRECTORY/<instance>` (system unit), else `$XDG_STATE_HOME/nimbus/<instance>`;
    /// the journal lives here (DESIGN §6).
    public static func stateDirectory(instance: String, environment: [String: String]) throws(LocationError) -> String {
        try validateInstanceName(instance)
        if let system = systemdDirectory("STATE_DIRECTORY", environment) {
            return join(system, instance)
        }
        guard let state = stateHome(environment) else { throw .homeNotSet(neededFor: "the state directory") }
        return join(state, "nimbus/\(instance)")
    }

    /// The directory that holds the control sockets: `$RUNTIME_DIRECTORY` (system unit), else
    /// `$XDG_RUNTIME_DIR/nimbus`, else `/tmp/nimbus-<uid>`.
    ///
    /// The daemon creates it with mode 0700. The `/tmp` fallback is in a world-writable
    /// directory where another user could have created it first (or planted a symlink), so
    /// there the daemon must create it with `mkdir` 0700 without following symlinks and then
    /// check that it is a real directory owned by `uid` with mode 0700, refusing to start
    /// otherwise. `nimbusctl` should make the same ownership check before connecting.
    public static func socketDirectory(environment: [String: String], uid: UInt32) -> String {
        if let system = systemdDirectory("RUNTIME_DIRECTORY", environment) { return system }
        if let runtime = runtimeDirectory(environment) { return join(runtime, "nimbus") }
        return "/tmp/nimbus-\(uid)"
    }

    /// The control socket of an instance (DESIGN §7): `<socketDirectory>/<instance>.sock`.
    /// `nimbusctl` calls this to find the daemon; `nimbusd` listens exactly here unless given
    /// `--socket`. Under a user unit, do not set `RuntimeDirectory=` to anything but `nimbus`,
    /// or the daemon's `RUNTIME_DIRECTORY` would move the socket away from where `nimbusctl`
    /// looks for it.
    public static func socketPath(instance: String, environment: [String: String], uid: UInt32) throws(LocationError) -> String {
        try validateInstanceName(instance)
        return join(socketDirectory(environment: environment, uid: uid), instance + ".sock")
    }

    /// The socket of the system unit's daemon: `/run/nimbus/<instance>.sock`.
    public static func systemSocketPath(instance: String) throws(LocationError) -> String {
        try validateInstanceName(instance)
        return join(systemRuntimeDirectory, instance + ".sock")
    }

    // MARK: User-written paths

    /// An absolute, lexically normalized path for what a user wrote: `~` and `~/…` expand to
    /// `HOME`; a relative path is taken relative to `currentDirectory`; `.`, `..` and repeated
    /// slashes are resolved the way a shell's `cd` does (without looking at symlinks).
    public static func absolutePath(_ path: String, currentDirectory: String,
                                    environment: [String: String]) throws(LocationError) -> String {
        if path.isEmpty { throw .emptyPath }
        if path == "~" || path.hasPrefix("~/") {
            guard let home = home(environment) else { throw .homeNotSet(neededFor: "expanding ~ in \(path)") }
            return normalize(home + "/" + path.dropFirst())
        }
        // `~user` needs the password database, which is I/O; a full path is unambiguous.
        if path.hasPrefix("~") { throw .userHomeNotSupported(path) }
        if path.hasPrefix("/") { return normalize(path) }
        return normalize(currentDirectory + "/" + path)
    }

    /// `/a//b/./c/../d/` → `/a/b/d`. Input must be absolute; `..` at the root stays at the root.
    public static func normalize(_ absolute: String) -> String {
        var parts: [Substring] = []
        for part in absolute.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": _ = parts.popLast()
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// Whether `inner` is `outer` or lies below it (both normalized absolute paths).
    public static func isSameOrInside(_ inner: String, _ outer: String) -> Bool {
        inner == outer || outer == "/" || inner.hasPrefix(outer + "/")
    }

    // MARK: Helpers

    static func xdg(_ variable: String, orHome relative: String, _ environment: [String: String]) -> String? {
        if let value = absoluteValue(environment[variable]) { return value }
        return home(environment).map { join($0, relative) }
    }

    static func systemdDirectory(_ variable: String, _ environment: [String: String]) -> String? {
        guard let list = environment[variable] else { return nil }
        let first = list.split(separator: ":", omittingEmptySubsequences: true).first.map(String.init)
        return absoluteValue(first)
    }

    /// The value normalized if it is an absolute path, else nil (unset, empty or relative).
    static func absoluteValue(_ value: String?) -> String? {
        guard let value, value.hasPrefix("/") else { return nil }
        return normalize(value)
    }

    static func join(_ directory: String, _ relative: String) -> String {
        directory == "/" ? "/" + relative : directory + "/" + relative
    }

    static func isInstanceCharacter(_ c: Unicode.Scalar) -> Bool {
        switch c {
        case "a"..."z", "A"..."Z", "0"..."9", ".", "_", "-": return true
        default: return false
        }
    }

    static func describe(_ c: Unicode.Scalar) -> String {
        let hex = String(c.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        return c.properties.isWhitespace || c.value < 0x20 || c.value == 0x7F ? code : "'\(c)' (\(code))"
    }
}

/// Why a location could not be worked out; the description is one plain-English line.
public enum LocationError: Error, Equatable, CustomStringConvertible {
    case invalidInstanceName(String, reason: String)
    /// Neither the XDG variable nor an absolute `HOME` is set.
    case homeNotSet(neededFor: String)
    case userHomeNotSupported(String)
    case emptyPath

    public var description: String {
        switch self {
        case let .invalidInstanceName(name, reason):
            return "invalid instance name \"\(name)\": \(reason); use 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'"
        case let .homeNotSet(purpose):
            return "HOME is not set to an absolute path, which is needed for \(purpose)"
        case let .userHomeNotSupported(path):
            return "\"\(path)\": ~user paths are not supported; write the full path"
        case .emptyPath:
            return "the path is empty"
        }
    }
}
