import NimbusProtocol

/// One setting: where it lives in the config file, its flag if it has one, how to parse it
/// and how to print it back (for `--help` defaults and round-trip tests).
struct ConfigSetting {
    let section: String
    let key: String
    let flag: String?
    let metavar: String
    let summary: String
    let apply: (String, ValueContext, inout Configuration) throws -> Void
    let render: (Configuration) -> String

    /// The single list of settings, in documentation order.
    static var all: [ConfigSetting] {
        [
            folder("local", \.localRoot, isDefault: \.localRootIsDefault, flag: "--local", summary: "the local folder to sync"),
            folder("cloud", \.cloudRoot, isDefault: \.cloudRootIsDefault, flag: "--cloud",
                   summary: "the cloud folder: a second disk or a network mount"),
            choice("pair", "mode", \.settings.mode, Configuration.Mode.allCases.map { ($0.rawValue, $0) }, flag: "--mode", metavar: "MODE",
                   summary: "mirror downloads every cloud file; on-demand shows placeholders"),
            value("placeholders", "hydrate-on-open", \.settings.hydrateOnOpen, expected: "true or false",
                  summary: "download a placeholder when a program opens it", parse: parseBool, render: { "\($0)" }),
            value("placeholders", "open-rate-limit", \.settings.openRateLimit, expected: "a number of downloads per minute such as 30",
                  summary: "downloads per minute that opening placeholders may trigger",
                  parse: { Int($0).flatMap { (0...1_000_000).contains($0) ? $0 : nil } }, render: { "\($0)" }),
            choice("placeholders", "style", \.placeholderStyle, Configuration.PlaceholderStyleChoice.allCases.map { ($0.rawValue, $0) },
                   summary: "auto (real names where kernel, privilege and filesystem allow), real-name or suffix"),
            value("placeholders", "fill-timeout", \.settings.fillTimeout, expected: Units.durationExpectation + " (more than zero)",
                  summary: "how long opening a real-name placeholder may wait before it fails with EIO",
                  parse: positiveDuration, render: Units.formatDuration),
            value("placeholders", "refused-programs", \.settings.refusedPrograms,
                  expected: "program names separated by commas (indexers such as updatedb), or none",
                  summary: "programs that get EPERM instead of fetching a real-name placeholder",
                  parse: parseProgramList, render: { $0.isEmpty ? "none" : $0.joined(separator: ",") }),
            value("cache", "cache-limit", \.settings.cacheLimit, expected: Units.sizeExpectation + ", or unlimited",
                  summary: "bytes of downloaded, unpinned files to keep",
                  parse: { disabled($0, "unlimited") ? .some(nil) : Units.parseSize($0).map { .some($0) } },
                  render: { $0.map(Units.formatSize) ?? "unlimited" }),
            value("cache", "evict-after", \.settings.evictAfter, expected: Units.durationExpectation + ", or never",
                  summary: "evict downloaded files not opened for this long",
                  parse: { disabled($0, "never") ? .some(nil) : positiveDuration($0).map { .some($0) } },
                  render: { $0.map(Units.formatDuration) ?? "never" }),
            value("cache", "min-free-space", \.settings.minFreeSpace, expected: Units.sizeExpectation,
                  summary: "free space that automatic downloads leave on the disk", parse: Units.parseSize, render: Units.formatSize),
            value("safety", "max-delete-percent", \.settings.maxDeletePercent, expected: "a percentage from 0 to 100 such as 50",
                  summary: "hold a batch that deletes more than this share of the files (and over 100)",
                  parse: parsePercent, render: { "\($0)" }),
            value("safety", "version-retention", \.settings.versionRetention, expected: Units.durationExpectation,
                  summary: "how long replaced and deleted files stay in .nimbus/versions",
                  parse: Units.parseDuration, render: Units.formatDuration),
            value("versions", "max-size", \.settings.versionsMaxSize, expected: Units.sizeExpectation + ", or unlimited",
                  summary: "bytes .nimbus/versions may hold; the oldest versions go first",
                  parse: { disabled($0, "unlimited") ? .some(nil) : Units.parseSize($0).map { .some($0) } },
                  render: { $0.map(Units.formatSize) ?? "unlimited" }),
            choice("watch", "cloud", \.cloudWatch, Configuration.CloudWatch.allCases.map { ($0.rawValue, $0) },
                   summary: "inotify, or poll for a network mount that other machines change"),
            value("watch", "poll-interval", \.settings.pollInterval, expected: Units.durationExpectation + " (more than zero)",
                  summary: "how often a polled cloud folder is checked", parse: positiveDuration, render: Units.formatDuration),
            value("watch", "rescan-interval", \.settings.rescanInterval, expected: Units.durationExpectation + " (more than zero)",
                  summary: "how often both folders are fully rescanned", parse: positiveDuration, render: Units.formatDuration),
            value("watch", "quiet-period", \.settings.quietPeriod, expected: Units.durationExpectation,
                  summary: "how long a file written without closing must be quiet before upload",
                  parse: Units.parseDuration, render: Units.formatDuration),
            value("device", "name", \.deviceName, expected: "a device name of 1 to 64 characters without '/' or control characters",
                  flag: "--device-name", metavar: "NAME", summary: "the name used in conflict copies",
                  parse: validDeviceName, render: { $0 }),
            value("desktop", "notifications", \.notifications, expected: "on or off",
                  summary: "desktop notifications (held deletions, conflicts, errors) when a session bus exists",
                  parse: parseBool, render: { $0 ? "on" : "off" }),
            choice("log", "level", \.logLevel, Logger.Level.allCases.map { ($0.name, $0) }, flag: "--log-level", metavar: "LEVEL",
                   summary: "error, warning, notice, info or debug"),
        ]
    }

    /// `a, b,c` → ["a", "b", "c"]; `none` → []; names with '/' or spaces are refused.
    static func parseProgramList(_ text: String) -> [String]? {
        if text.lowercased() == "none" { return [] }
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        let names = text.split(separator: ",", omittingEmptySubsequences: false).map { part in
            String(part.drop(while: blank).reversed().drop(while: blank).reversed())
        }
        guard !names.isEmpty, names.allSatisfy({ !$0.isEmpty && !$0.contains("/") && !$0.contains(" ") }) else { return nil }
        return names
    }

    static var schema: ConfigFile.Schema {
        var result: ConfigFile.Schema = []
        for setting in all {
            if let last = result.indices.last, result[last].section == setting.section {
                result[last].keys.append(setting.key)
            } else {
                result.append((setting.section, [setting.key]))
            }
        }
        return result
    }

    // MARK: Kinds of settings

    static func value<T>(_ section: String, _ key: String, _ path: WritableKeyPath<Configuration, T>, expected: String,
                         flag: String? = nil, metavar: String = "VALUE", summary: String,
                         parse: @escaping (String) -> T?, render: @escaping (T) -> String) -> ConfigSetting {
        ConfigSetting(section: section, key: key, flag: flag, metavar: metavar, summary: summary,
                      apply: { text, _, configuration in
                          guard let value = parse(text) else { throw ValueProblem.expected(expected, got: text) }
                          configuration[keyPath: path] = value
                      },
                      render: { render($0[keyPath: path]) })
    }

    /// One of a few names; a near miss gets a suggestion.
    static func choice<T: Equatable>(_ section: String, _ key: String, _ path: WritableKeyPath<Configuration, T>,
                                     _ names: [(String, T)], flag: String? = nil, metavar: String = "VALUE",
                                     summary: String) -> ConfigSetting {
        let spellings = names.map(\.0)
        let expected = spellings.dropLast().joined(separator: ", ") + " or " + spellings.last!
        return ConfigSetting(section: section, key: key, flag: flag, metavar: metavar, summary: summary,
                             apply: { text, _, configuration in
                                 guard let match = names.first(where: { $0.0 == text.lowercased() }) else {
                                     throw ValueProblem.expected(expected, got: text, suggestion: Spelling.closest(to: text, among: spellings))
                                 }
                                 configuration[keyPath: path] = match.1
                             },
                             render: { configuration in names.first { $0.1 == configuration[keyPath: path] }?.0 ?? "?" })
    }

    /// A root folder. In the config file it must be absolute or start with `~/`: a relative
    /// path there would depend on the daemon's working directory, which is `/` under systemd.
    /// On the command line it is relative to the current directory, as users expect.
    static func folder(_ key: String, _ path: WritableKeyPath<Configuration, String>,
                       isDefault: WritableKeyPath<Configuration, Bool>, flag: String, summary: String) -> ConfigSetting {
        ConfigSetting(section: "pair", key: key, flag: flag, metavar: "DIR", summary: summary,
                      apply: { text, context, configuration in
                          if context.origin == .file, !(text.hasPrefix("/") || text == "~" || text.hasPrefix("~/")) {
                              throw ValueProblem.expected("an absolute path or one starting with ~/", got: text)
                          }
                          do {
                              configuration[keyPath: path] = try Locations.absolutePath(
                                  text, currentDirectory: context.currentDirectory, environment: context.environment)
                          } catch {
                              throw ValueProblem(message: "\(error)")
                          }
                          configuration[keyPath: isDefault] = false
                      },
                      render: { $0[keyPath: path] })
    }

    // MARK: Value parsers

    static func parseBool(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: return nil
        }
    }

    static func parsePercent(_ text: String) -> Int? {
        let digits = text.hasSuffix("%") ? String(text.dropLast()).trimmedOfBlanks : text
        return Int(digits).flatMap { (0...100).contains($0) ? $0 : nil }
    }

    static func positiveDuration(_ text: String) -> Duration? {
        Units.parseDuration(text).flatMap { $0 > .zero ? $0 : nil }
    }

    /// `unlimited`, `never`, `none` and `off` switch an optional limit off.
    static func disabled(_ text: String, _ word: String) -> Bool {
        [word, "none", "off"].contains(text.lowercased())
    }

    /// Device names end up in file names ("conflict from NAME"), so no `/`, no control
    /// characters, and a length that keeps those names short.
    static func validDeviceName(_ text: String) -> String? {
        let name = text.trimmedOfBlanks
        guard (1...64).contains(name.count), !name.contains("/"),
              !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return nil }
        return name
    }
}
