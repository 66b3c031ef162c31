import Testing
@testable import NimbusDaemon
import NimbusProtocol
import NimbusTestSupport

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
        guard case let .run(configuration) = try outcome(arguments) else { throw HarnessFailure("not a run") }
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
