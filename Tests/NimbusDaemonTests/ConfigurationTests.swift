import Testing
@testable import NimbusDaemon
import NimbusProtocol

/// A run of `DaemonArguments.resolve` against an in-memory set of files.
struct Launch {
    var environment = ["HOME": "/home/u", "XDG_RUNTIME_DIR": "/run/user/1000"]
    var files: [String: [UInt8]] = [:]
    var currentDirectory = "/work/dir"
    var hostname = "laptop"

    static let defaultConfig = "/home/u/.config/nimbus/default.conf"

    init(file text: String? = nil, at path: String = Launch.defaultConfig) {
        if let text { files[path] = Array(text.utf8) }
    }

    func outcome(_ arguments: [String]) throws -> DaemonLaunch {
        try DaemonArguments.resolve(arguments: arguments, environment: environment, currentDirectory: currentDirectory,
                                    hostname: hostname, uid: 1000, readFile: { files[$0] })
    }

    func configuration(_ arguments: [String] = []) throws -> Configuration {
        guard case let .run(configuration) = try outcome(arguments) else { throw TestFailure("not a run") }
        return configuration
    }

    func configurationError(_ arguments: [String] = []) -> ConfigurationError? {
        do { _ = try outcome(arguments) } catch let error as ConfigurationError { return error } catch { return nil }
        return nil
    }

    func usageError(_ arguments: [String]) -> UsageError? {
        do { _ = try outcome(arguments) } catch let error as UsageError { return error } catch { return nil }
        return nil
    }
}

private struct TestFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

private let everyKey = """
    # A complete file.
    ; both comment styles
    [pair]
    local = ~/Documents/Sync
    cloud = "/mnt/nas/nimbus"
    mode = on-demand

    [placeholders]
    hydrate-on-open = no
    open-rate-limit = 12
    style = real-name
    fill-timeout = 90s
    refused-programs = updatedb, my-indexer

    [cache]
    cache-limit = 1.5GiB
    evict-after = 30d
    min-free-space = 512M

    [safety]
    max-delete-percent = 20%
    version-retention = 12h

    [versions]
    max-size = 2G

    [watch]
    cloud = poll
    poll-interval = 90s
    rescan-interval = 1h30m
    quiet-period = 500ms

    [device]
    name = 'Work Laptop'

    [desktop]
    notifications = off

    [log]
    level = debug
    """

@Suite struct ConfigurationTests {
    @Test func noArgumentsAndNoFileGiveTheEmbeddedDefault() throws {
        let c = try Launch().configuration()
        #expect(c.localRoot == "/home/u/Nimbus")
        #expect(c.cloudRoot == "/home/u/.local/share/nimbus/cloud")
        #expect(c.usesEmbeddedDefaults && c.localRootIsDefault && c.cloudRootIsDefault)
        #expect(c.configFile == nil)
        #expect(c.instance == "default")
        #expect(c.socketPath == "/run/user/1000/nimbus/default.sock")
        #expect(c.stateDirectory == "/home/u/.local/state/nimbus/default")
        #expect(c.deviceName == "laptop")
        #expect(c.mode == .mirror && c.logLevel == .info && c.cloudWatch == .inotify)
        #expect(c.hydrateOnOpen && c.openRateLimit == 30 && c.notifications)
        #expect(c.cacheLimit == nil && c.evictAfter == nil && c.minFreeSpace == 1 << 30)
        #expect(c.maxDeletePercent == 50 && c.versionRetention == .seconds(30 * 86_400))
        #expect(c.pollInterval == .seconds(30) && c.rescanInterval == .seconds(3_600) && c.quietPeriod == .seconds(2))
    }

    @Test func everyKeyParses() throws {
        let c = try Launch(file: everyKey).configuration()
        #expect(c.configFile == Launch.defaultConfig)
        #expect(c.localRoot == "/home/u/Documents/Sync" && c.cloudRoot == "/mnt/nas/nimbus")
        #expect(!c.localRootIsDefault && !c.cloudRootIsDefault && !c.usesEmbeddedDefaults)
        #expect(c.mode == .onDemand && !c.hydrateOnOpen && c.openRateLimit == 12)
        #expect(c.placeholderStyle == .realName && c.fillTimeout == .seconds(90))
        #expect(c.refusedPrograms == ["updatedb", "my-indexer"])
        #expect(c.cacheLimit == 1_610_612_736 && c.evictAfter == .seconds(30 * 86_400) && c.minFreeSpace == 512 << 20)
        #expect(c.maxDeletePercent == 20 && c.versionRetention == .seconds(12 * 3_600))
        #expect(c.cloudWatch == .poll && c.pollInterval == .seconds(90) && c.rescanInterval == .seconds(5_400))
        #expect(c.quietPeriod == .milliseconds(500) && c.deviceName == "Work Laptop" && c.logLevel == .debug)
        #expect(!c.notifications)
    }

    /// Every setting prints back to text that parses to the same value, so `--help` shows
    /// defaults that could be pasted into a config file, and no key is left untested.
    @Test func everySettingRoundTrips() throws {
        let configured = try Launch(file: everyKey).configuration()
        var text = ""
        for (section, keys) in ConfigSetting.schema {
            text += "[\(section)]\n"
            for key in keys {
                let setting = ConfigSetting.all.first { $0.section == section && $0.key == key }!
                text += "\(key) = \(setting.render(configured))\n"
            }
        }
        #expect(try Launch(file: text).configuration() == configured)
        #expect(ConfigSetting.all.count == 21)
        #expect(configured.versionsMaxSize == 2 << 30)
    }

    /// [placeholders] style, fill-timeout and refused-programs: bad values name the file, line and key.
    @Test func placeholderSettingsAreValidated() throws {
        #expect(try Launch(file: "[placeholders]\nrefused-programs = none\n").configuration().refusedPrograms == [])
        #expect(try Launch(file: "").configuration().placeholderStyle == .auto)
        for (text, key) in [("style = real names", "style"), ("fill-timeout = 0s", "fill-timeout"),
                            ("refused-programs = a,,b", "refused-programs"), ("refused-programs = /usr/bin/x", "refused-programs")] {
            let error = #expect(throws: ConfigurationError.self) { try Launch(file: "[placeholders]\n" + text + "\n").configuration() }
            let message = error.map { "\($0)" } ?? ""
            #expect(message.contains(":2:") && message.contains(key), "\(text): \(message)")
        }
    }

    @Test func noneWordsSwitchLimitsOff() throws {
        let c = try Launch(file: "[cache]\ncache-limit = 10G\nevict-after = never\n").configuration()
        #expect(c.cacheLimit == 10 << 30 && c.evictAfter == nil)
        #expect(try Launch(file: "[cache]\ncache-limit = unlimited\n").configuration().cacheLimit == nil)
    }

    @Test(arguments: ["true", "yes", "on", "1", "TRUE", "Yes"])
    func trueBooleans(word: String) throws {
        #expect(try Launch(file: "[placeholders]\nhydrate-on-open = false\n").configuration().hydrateOnOpen == false)
        #expect(try Launch(file: "[placeholders]\nhydrate-on-open = \(word)\n").configuration().hydrateOnOpen)
    }

    @Test(arguments: ["false", "no", "off", "0"])
    func falseBooleans(word: String) throws {
        #expect(try Launch(file: "[placeholders]\nhydrate-on-open = \(word)\n").configuration().hydrateOnOpen == false)
    }

    @Test func syntaxDetails() throws {
        let text = "\u{FEFF}# comment\r\n\r\n  [pair]  \r\n\tmode=on-demand\r\n   ; indented comment\r\n[device]\nname = \"a = b\"\n"
        let c = try Launch(file: text).configuration()
        #expect(c.mode == .onDemand && c.deviceName == "a = b")
    }

    @Test func oneSectionMayBeSplit() throws {
        let c = try Launch(file: "[pair]\nmode = on-demand\n[log]\nlevel = error\n[pair]\nlocal = /data/l\n").configuration()
        #expect(c.mode == .onDemand && c.localRoot == "/data/l" && c.logLevel == .error)
        #expect(!c.localRootIsDefault && c.cloudRootIsDefault)
    }

    @Test func flagsOverrideTheFile() throws {
        let launch = Launch(file: everyKey)
        let c = try launch.configuration(["--local", "/l", "--cloud=/c", "--mode", "mirror", "--device-name=desk",
                                           "--log-level", "warning"])
        #expect(c.localRoot == "/l" && c.cloudRoot == "/c" && c.mode == .mirror)
        #expect(c.deviceName == "desk" && c.logLevel == .warning)
        #expect(c.cacheLimit == 1_610_612_736, "keys without a flag keep the file's value")
    }

    @Test func launchFlagsChooseTheFiles() throws {
        let launch = Launch(file: "[pair]\nmode = on-demand\n", at: "/etc/n/work.conf")
        let c = try launch.configuration(["--instance", "work", "--config=/etc/n/work.conf", "--socket", "s.sock",
                                          "--state-dir=~/st"])
        #expect(c.instance == "work" && c.configFile == "/etc/n/work.conf" && c.mode == .onDemand)
        #expect(c.socketPath == "/work/dir/s.sock" && c.stateDirectory == "/home/u/st")
        let other = try Launch().configuration(["--instance=work"])
        #expect(other.socketPath == "/run/user/1000/nimbus/work.sock")
        #expect(other.stateDirectory == "/home/u/.local/state/nimbus/work")
    }

    @Test func theInstanceChoosesTheDefaultConfigFile() throws {
        let launch = Launch(file: "[log]\nlevel = debug\n", at: "/home/u/.config/nimbus/work.conf")
        #expect(try launch.configuration(["--instance", "work"]).logLevel == .debug)
        #expect(try launch.configuration().logLevel == .info)
    }

    @Test func flagPathsExpandTildeAndResolveRelativePaths() throws {
        let c = try Launch().configuration(["--local", "~/Sync/", "--cloud", "../mnt/./cloud"])
        #expect(c.localRoot == "/home/u/Sync" && c.cloudRoot == "/work/mnt/cloud")
        #expect(!c.localRootIsDefault && !c.cloudRootIsDefault)
    }

    @Test func systemUnitDirectoriesAreUsed() throws {
        var launch = Launch(file: "[pair]\nlocal = /srv/l\ncloud = /srv/c\n", at: "/etc/nimbus/default.conf")
        launch.environment = ["CONFIGURATION_DIRECTORY": "/etc/nimbus", "STATE_DIRECTORY": "/var/lib/nimbus",
                              "RUNTIME_DIRECTORY": "/run/nimbus", "HOME": "/"]
        let c = try launch.configuration()
        #expect(c.configFile == "/etc/nimbus/default.conf" && c.localRoot == "/srv/l")
        #expect(c.stateDirectory == "/var/lib/nimbus/default" && c.socketPath == "/run/nimbus/default.sock")
    }

    @Test func theDaemonListensWhereNimbusctlLooks() throws {
        for environment in [["HOME": "/home/u"], ["HOME": "/home/u", "XDG_RUNTIME_DIR": "/run/user/7"]] {
            var launch = Launch()
            launch.environment = environment
            let c = try launch.configuration(["--instance", "x"])
            #expect(c.socketPath == (try Locations.socketPath(instance: "x", environment: environment, uid: 1000)))
        }
    }

    @Test func withoutHomeTheFoldersMustBeGiven() throws {
        var launch = Launch()
        launch.environment = [:]
        #expect(launch.configurationError()?.description.contains("give --state-dir DIR") == true)
        let error = launch.configurationError(["--state-dir", "/st"])
        #expect(error?.description.contains("no local folder: HOME is not set") == true)
        #expect(error?.exitCode == 78)
        let c = try launch.configuration(["--state-dir", "/st", "--local", "/l", "--cloud", "/c"])
        #expect(c.socketPath == "/tmp/nimbus-1000/default.sock")
    }

    @Test func deviceNameDefaultsToTheHostname() throws {
        var launch = Launch()
        launch.hostname = "box.example.org"
        #expect(try launch.configuration().deviceName == "box.example.org")
        launch.hostname = ""
        #expect(try launch.configuration().deviceName == "nimbus")
    }
}

// MARK: - Config file errors: exit 78, naming the file, the line and the key

extension ConfigurationTests {
    @Suite struct FileErrors {
        struct Case: CustomTestStringConvertible, Sendable {
            var text: String
            var kind: ConfigurationError.Kind
            var line: Int
            var key: String?
            var fragment: String
            var testDescription: String { fragment }
        }

        static let cases: [Case] = [
            Case(text: "[cahce]\n", kind: .unknownSection, line: 1, key: nil, fragment: "[cahce]: unknown section; did you mean [cache]?"),
            Case(text: "[cache]\ncache-limt = 1G\n", kind: .unknownKey, line: 2, key: "cache-limt",
                 fragment: "[cache] cache-limt: unknown key; did you mean cache-limit?"),
            Case(text: "[placeholders]\nmode = mirror\n", kind: .unknownKey, line: 2, key: "mode", fragment: "mode belongs in [pair]"),
            Case(text: "[cache]\n\nmin-free-space = ten gigs\n", kind: .badValue, line: 3, key: "min-free-space",
                 fragment: "[cache] min-free-space: expected a size such as 10G or 512M, got \"ten gigs\""),
            Case(text: "[cache]\ncache-limit = 10G # ten\n", kind: .badValue, line: 2, key: "cache-limit",
                 fragment: "comments must be on a line of their own"),
            Case(text: "[cache]\nevict-after = 6M\n", kind: .badValue, line: 2, key: "evict-after",
                 fragment: "expected a duration such as 30d, 12h, 90s or 500ms, or never, got \"6M\""),
            Case(text: "[pair]\nmode = ondemand\n", kind: .badValue, line: 2, key: "mode",
                 fragment: "expected mirror or on-demand, got \"ondemand\"; did you mean on-demand?"),
            Case(text: "[pair]\nlocal = Documents\n", kind: .badValue, line: 2, key: "local",
                 fragment: "expected an absolute path or one starting with ~/"),
            Case(text: "[safety]\nmax-delete-percent = 150\n", kind: .badValue, line: 2, key: "max-delete-percent",
                 fragment: "a percentage from 0 to 100"),
            Case(text: "[watch]\npoll-interval = 0s\n", kind: .badValue, line: 2, key: "poll-interval", fragment: "more than zero"),
            Case(text: "[placeholders]\nhydrate-on-open = maybe\n", kind: .badValue, line: 2, key: "hydrate-on-open",
                 fragment: "expected true or false"),
            Case(text: "[desktop]\nnotifications = sometimes\n", kind: .badValue, line: 2, key: "notifications",
                 fragment: "[desktop] notifications: expected on or off, got \"sometimes\""),
            Case(text: "[desktop]\nnotification = on\n", kind: .unknownKey, line: 2, key: "notification",
                 fragment: "did you mean notifications?"),
            Case(text: "[device]\nname = \"laptop\n", kind: .badValue, line: 2, key: "name", fragment: "unterminated quote"),
            Case(text: "[device]\nname = a/b\n", kind: .badValue, line: 2, key: "name", fragment: "without '/'"),
            Case(text: "[pair]\nmode = mirror\n\nmode = on-demand\n", kind: .duplicateKey, line: 4, key: "mode",
                 fragment: "duplicate key; it is already set on line 2"),
            Case(text: "# top\nlocal = /x\n[pair]\n", kind: .keyOutsideSection, line: 2, key: "local",
                 fragment: "local: key outside any section; put it under [pair]"),
            Case(text: "[pair]\njust some words\n", kind: .malformedLine, line: 2, key: nil,
                 fragment: "[pair]: expected \"key = value\", a [section] header or a comment"),
            Case(text: "[pair]\nmode: mirror\n", kind: .malformedLine, line: 2, key: nil, fragment: "use '=' between key and value"),
            Case(text: "[pair\n", kind: .malformedLine, line: 1, key: nil, fragment: "expected a section header such as [pair]"),
            Case(text: "[pair]\nmode = mir\u{0}ror\n", kind: .malformedLine, line: 2, key: nil, fragment: "control character U+0000"),
        ]

        @Test(arguments: cases)
        func errorNamesFileLineAndKey(_ c: Case) throws {
            let error = try #require(Launch(file: c.text).configurationError())
            #expect(error.kind == c.kind)
            #expect(error.exitCode == 78)
            #expect(error.file == Launch.defaultConfig && error.line == c.line && error.key == c.key)
            #expect(error.description.hasPrefix("\(Launch.defaultConfig):\(c.line): "), "\(error)")
            #expect(error.description.contains(c.fragment), "\(error)")
            #expect(!error.description.contains("\n"))
        }

        @Test func theExampleOfTheBrief() throws {
            let error = try #require(Launch(file: "[cache]\nmin-free-space = ten gigs\n").configurationError())
            #expect(error.description
                == "/home/u/.config/nimbus/default.conf:2: [cache] min-free-space: expected a size such as 10G or 512M, got \"ten gigs\"")
        }

        @Test func nonUTF8BytesNameTheLine() throws {
            var launch = Launch()
            launch.files[Launch.defaultConfig] = Array("[device]\n".utf8) + [0x6E, 0x61, 0x6D, 0x65, 0x3D, 0xFF, 0xFE, 0x0A]
            let error = try #require(launch.configurationError())
            #expect(error.kind == .notUTF8 && error.line == 2 && error.exitCode == 78)
            #expect(error.description == "\(Launch.defaultConfig):2: [device]: the line is not valid UTF-8; save the file as UTF-8")
        }

        @Test func aMissingConfigGivenWithTheFlagIsAnError() throws {
            let error = try #require(Launch().configurationError(["--config", "missing.conf"]))
            #expect(error.kind == .missingFile && error.exitCode == 78)
            #expect(error.description == "/work/dir/missing.conf: no such file (given with --config)")
        }

        @Test func anUnreadableConfigIsAnError() throws {
            struct Denied: Error, CustomStringConvertible { var description: String { "Permission denied" } }
            let error = try #require(throws: ConfigurationError.self) {
                try DaemonArguments.resolve(arguments: [], environment: ["HOME": "/home/u"], currentDirectory: "/",
                                            hostname: "h", uid: 1, readFile: { _ in throw Denied() })
            }
            #expect(error.kind == .unreadable && error.exitCode == 78)
            #expect(error.description == "\(Launch.defaultConfig): cannot read the config file: Permission denied")
        }

        @Test(arguments: [
            (["--local", "/d", "--cloud", "/d/"], "are the same folder (/d)"),
            (["--local", "/d", "--cloud", "/d/cloud"], "the cloud folder /d/cloud is inside the local folder /d"),
            (["--local", "/d/l", "--cloud", "/d"], "the local folder /d/l is inside the cloud folder /d"),
            (["--local", "/home/u/.local", "--cloud", "/c"], "the state directory /home/u/.local/state/nimbus/default is inside the local folder"),
            (["--socket", "/" + String(repeating: "s", count: 120)], "bytes long, over the 107 that Unix sockets allow"),
        ])
        func settingsThatAreUnsafeTogether(arguments: [String], fragment: String) throws {
            let error = try #require(Launch().configurationError(arguments))
            #expect(error.kind == .inconsistent && error.exitCode == 78)
            #expect(error.description.contains(fragment), "\(error)")
        }
    }
}

// MARK: - Command-line errors: exit 64, with a pointer to --help

extension ConfigurationTests {
    @Suite struct FlagErrors {
        @Test(arguments: [
            (["--clod", "/c"], UsageError.Kind.unknownOption, "unknown option --clod; did you mean --cloud? Try 'nimbusd --help'."),
            (["-local", "/l"], .unknownOption, "did you mean --local?"),
            (["--lcoal=/l"], .unknownOption, "did you mean --local?"),
            (["--cache-limit", "1G"], .unknownOption, "cache-limit is set in the [cache] section of the config file"),
            (["--frobnicate"], .unknownOption, "unknown option --frobnicate"),
            (["--local"], .missingValue, "--local needs a value (DIR)"),
            (["--local", "--cloud", "/c"], .missingValue, "--local needs a value (DIR)"),
            (["--local="], .missingValue, "--local needs a value (DIR), got an empty one"),
            (["--mode", "ondemand"], .badValue, "--mode: expected mirror or on-demand, got \"ondemand\"; did you mean on-demand?"),
            (["--log-level=loud"], .badValue, "--log-level: expected error, warning, notice, info or debug, got \"loud\""),
            (["--device-name", "a/b"], .badValue, "--device-name: expected a device name"),
            (["--instance", "../x"], .badValue, "--instance: invalid instance name \"../x\": it contains '/'"),
            (["--local", "~bob/x"], .badValue, "--local: \"~bob/x\": ~user paths are not supported"),
            (["/home/u/Sync"], .strayArgument, "unexpected argument \"/home/u/Sync\""),
            (["--", "x"], .strayArgument, "unexpected argument \"x\""),
            (["--local", "/a", "--local=/b"], .repeatedOption, "--local is given twice (\"/a\" and \"/b\")"),
            (["--version=2"], .unexpectedValue, "--version takes no value"),
        ])
        func usageErrors(arguments: [String], kind: UsageError.Kind, fragment: String) throws {
            let error = try #require(Launch().usageError(arguments))
            #expect(error.kind == kind && error.exitCode == 64)
            #expect(error.description.contains(fragment), "\(error)")
            #expect(error.description.hasSuffix("; try 'nimbusd --help'") || error.description.hasSuffix("? Try 'nimbusd --help'."))
        }

        @Test func bothValueFormsAreAccepted() throws {
            let spaced = try Launch().configuration(["--local", "/l", "--mode", "on-demand"])
            let joined = try Launch().configuration(["--local=/l", "--mode=on-demand"])
            #expect(spaced == joined && joined.localRoot == "/l" && joined.mode == .onDemand)
            #expect(try Launch().configuration(["--device-name=a=b"]).deviceName == "a=b")
        }

        @Test func versionAndHelp() throws {
            #expect(try Launch().outcome(["--version"]) == .version("nimbusd \(NimbusVersion.string)"))
            #expect(try Launch().outcome(["--mode", "mirror", "--version"]) == .version("nimbusd 0.1.0"))
            guard case let .help(text) = try Launch().outcome(["--bogus", "-h"]) else { throw TestFailure("no help") }
            for flag in ["--local DIR", "--cloud DIR", "--mode MODE", "--instance NAME", "--config FILE", "--socket PATH",
                         "--state-dir DIR", "--device-name NAME", "--log-level LEVEL", "--version", "-h, --help"] {
                #expect(text.contains("  " + flag), "\(flag) missing")
            }
            for fragment in ["Usage: nimbusd", "(default: /home/u/Nimbus)", "(default: mirror)", "(default: info)",
                             "the hostname, laptop", "/home/u/.config/nimbus/default.conf", "/home/u/.local/state/nimbus/default/",
                             "/run/user/1000/nimbus/default.sock", "man nimbusd", "nimbusctl", "64", "78"] {
                #expect(text.contains(fragment), "\(fragment) missing")
            }
            #expect(text.split(separator: "\n").filter { $0.hasPrefix("  --") || $0.hasPrefix("  -h") }.count == 11)
            guard case let .help(work) = try Launch().outcome(["--instance", "work", "--help"]) else { throw TestFailure("no help") }
            #expect(work.contains("/home/u/.config/nimbus/work.conf") && work.contains("nimbus/work.sock"))
        }
    }
}

// MARK: - Sizes, durations and spelling

extension ConfigurationTests {
    @Suite struct UnitTables {
        static let sizeTable: [(String, Int64)] = [
            ("0", 0), ("4096", 4096), ("1B", 1), ("1K", 1024), ("1k", 1024), ("1KiB", 1024), ("1KB", 1000),
            ("512M", 512 << 20), ("512m", 512 << 20), ("2 MB", 2_000_000), ("10G", 10 << 30), ("10GiB", 10 << 30),
            ("1.5GiB", 1_610_612_736), ("0.5K", 512), ("1T", 1 << 40), ("3TB", 3_000_000_000_000), ("1P", 1 << 50),
        ]

        @Test(arguments: sizeTable)
        func sizes(text: String, bytes: Int64) {
            #expect(Units.parseSize(text) == bytes)
        }

        @Test(arguments: ["", "G", "ten gigs", "-1G", "1.G", ".5G", "1.5X", "10GiBs", "1e3", "9000P", "１G", "1 G B"])
        func notSizes(text: String) {
            #expect(Units.parseSize(text) == nil)
        }

        static let durationTable: [(String, Duration)] = [
            ("30d", .seconds(30 * 86_400)), ("12h", .seconds(12 * 3_600)), ("90s", .seconds(90)), ("500ms", .milliseconds(500)),
            ("250us", .microseconds(250)), ("5ns", .nanoseconds(5)), ("10min", .seconds(600)), ("10m", .seconds(600)),
            ("2w", .seconds(14 * 86_400)), ("1y", .seconds(365 * 86_400)), ("1h30m", .seconds(5_400)), ("1h 30m", .seconds(5_400)),
            ("1.5h", .seconds(5_400)), ("90", .seconds(90)), ("0", .zero), ("2 days", .seconds(2 * 86_400)),
            ("1.0000000005s", .nanoseconds(1_000_000_000)),
        ]

        @Test(arguments: durationTable)
        func durations(text: String, duration: Duration) {
            #expect(Units.parseDuration(text) == duration)
        }

        @Test(arguments: ["", "d", "30D", "6M", "1h30", "ten", "-1s", "1s s", "1fortnight", "300y", "1.5.2s"])
        func notDurations(text: String) {
            #expect(Units.parseDuration(text) == nil)
        }

        @Test func formatting() {
            #expect([0, 1000, 1536, 2048, 512 << 20, 1 << 30, 3 << 40].map(Units.formatSize)
                == ["0", "1000", "1536", "2K", "512M", "1G", "3T"])
            let durations: [Duration] = [.zero, .nanoseconds(1), .milliseconds(500), .seconds(90), .seconds(5_400), .seconds(7_200),
                                         .seconds(30 * 86_400)]
            #expect(durations.map(Units.formatDuration) == ["0s", "1ns", "500ms", "90s", "90m", "2h", "30d"])
        }

        @Test func spellingSuggestions() {
            #expect(Spelling.closest(to: "--clod", among: ["--local", "--cloud"]) == "--cloud")
            #expect(Spelling.closest(to: "lcoal", among: ["local", "cloud"]) == "local")
            #expect(Spelling.closest(to: "--loc", among: ["--local", "--cloud"]) == "--local")
            #expect(Spelling.closest(to: "zzz", among: ["local", "cloud"]) == nil)
        }
    }
}
