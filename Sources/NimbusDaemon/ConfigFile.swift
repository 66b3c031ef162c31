import NimbusProtocol

/// The INI config file (DESIGN §8), read into entries with their line numbers.
///
/// Syntax, kept deliberately small (like systemd unit files, not like git config):
/// `[section]` headers; `key = value`; whole-line comments starting with `#` or `;`; blank
/// lines; a value may be wrapped in double or single quotes, which are removed (there are no
/// escapes). There are no inline comments, because `#` is legal in folder names; a value that
/// fails to parse and contains ` #` gets a hint saying so.
///
/// The parser knows the schema (which keys exist in which section) so that every mistake is
/// reported at its own line with a suggestion; it does not interpret values.
struct ConfigFile {
    struct Entry: Equatable {
        var section: String
        var key: String
        var value: String
        var line: Int
    }

    /// Sections in the order they are documented, each with its keys.
    typealias Schema = [(section: String, keys: [String])]

    let path: String
    let entries: [Entry]

    static func parse(_ bytes: [UInt8], path: String, schema: Schema) throws(ConfigurationError) -> ConfigFile {
        var reader = Reader(path: path, schema: schema)
        var content = bytes[...]
        if content.starts(with: [0xEF, 0xBB, 0xBF]) { content = content.dropFirst(3) }  // UTF-8 BOM
        for (offset, rawLine) in content.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            var line = rawLine
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            try reader.read(line, number: offset + 1)
        }
        return ConfigFile(path: path, entries: reader.entries)
    }

    private struct Reader {
        let path: String
        let schema: Schema
        var section: String?
        var entries: [Entry] = []
        var seen: [String: Int] = [:]  // "section\0key" → line

        init(path: String, schema: Schema) {
            self.path = path
            self.schema = schema
        }

        func fail(_ kind: ConfigurationError.Kind, _ line: Int, key: String? = nil, _ message: String) -> ConfigurationError {
            ConfigurationError(kind: kind, file: path, line: line, section: section, key: key, message: message)
        }

        mutating func read(_ bytes: ArraySlice<UInt8>, number: Int) throws(ConfigurationError) {
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw fail(.notUTF8, number, "the line is not valid UTF-8; save the file as UTF-8")
            }
            if let control = text.unicodeScalars.first(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
                throw fail(.malformedLine, number, "the line contains the control character U+\(String(control.value, radix: 16, uppercase: true).zeroPadded(to: 4))")
            }
            let trimmed = text.trimmedOfBlanks
            if trimmed.isEmpty || trimmed.hasPrefix("#") || trimmed.hasPrefix(";") { return }
            if trimmed.hasPrefix("[") { return try readHeader(trimmed, number: number) }
            guard let equals = trimmed.firstIndex(of: "="), case let key = trimmed[..<equals].trimmedOfBlanks, !key.isEmpty else {
                let hint = trimmed.contains(":") ? " (use '=' between key and value)" : ""
                throw fail(.malformedLine, number, "expected \"key = value\", a [section] header or a comment, got \"\(trimmed)\"\(hint)")
            }
            let value = try unquote(trimmed[trimmed.index(after: equals)...].trimmedOfBlanks, number: number, key: key)
            try record(key: key, value: value, number: number)
        }

        mutating func readHeader(_ trimmed: String, number: Int) throws(ConfigurationError) {
            guard trimmed.hasSuffix("]"), trimmed.count >= 2 else {
                throw fail(.malformedLine, number, "expected a section header such as [pair], got \"\(trimmed)\"")
            }
            let name = String(trimmed.dropFirst().dropLast()).trimmedOfBlanks
            let names = schema.map(\.section)
            guard names.contains(name) else {
                let suggestion = Spelling.closest(to: name, among: names).map { "did you mean [\($0)]? " } ?? ""
                throw ConfigurationError(kind: .unknownSection, file: path, line: number, section: name, key: nil,
                                         message: "unknown section; \(suggestion)(sections: \(names.joined(separator: ", ")))")
            }
            section = name
        }

        func unquote(_ value: String, number: Int, key: String) throws(ConfigurationError) -> String {
            guard let first = value.first, first == "\"" || first == "'" else { return value }
            guard value.count >= 2, value.last == first else {
                throw fail(.badValue, number, key: key, "unterminated quote in \(value)")
            }
            return String(value.dropFirst().dropLast())
        }

        mutating func record(key: String, value: String, number: Int) throws(ConfigurationError) {
            let home = schema.first { $0.keys.contains(key) }?.section
            guard let section else {
                let where_ = home.map { "put it under [\($0)]" } ?? "put it under a section header such as [pair]"
                throw fail(.keyOutsideSection, number, key: key, "key outside any section; \(where_)")
            }
            let keys = schema.first { $0.section == section }?.keys ?? []
            guard keys.contains(key) else {
                let message: String
                if let suggestion = Spelling.closest(to: key, among: keys) {
                    message = "unknown key; did you mean \(suggestion)?"
                } else if let home {
                    message = "unknown key in [\(section)]; \(key) belongs in [\(home)]"
                } else {
                    message = "unknown key; [\(section)] has \(keys.joined(separator: ", "))"
                }
                throw fail(.unknownKey, number, key: key, message)
            }
            let id = section + "\u{0}" + key
            if let earlier = seen[id] {
                throw fail(.duplicateKey, number, key: key, "duplicate key; it is already set on line \(earlier)")
            }
            seen[id] = number
            entries.append(Entry(section: section, key: key, value: value, line: number))
        }
    }
}

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
