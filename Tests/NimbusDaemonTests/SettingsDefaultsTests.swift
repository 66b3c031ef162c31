import Foundation
import Testing
@testable import NimbusDaemon

/// Each default is stated once, in `PairSettings` (or `Configuration` for what only the start
/// reads): the config parser, the runtime, the hydration server and the example config file
/// all show the same values.
@Suite struct SettingsDefaultsTests {
    static let exampleConfig = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Packaging/nimbus.conf.example").standardized.path

    /// An empty config file yields exactly the built-in defaults, and the runtime starts from
    /// them as they are: the engine's and the hydration server's values are the same.
    @Test func anEmptyConfigFileGivesTheBuiltInDefaults() throws {
        let configuration = try Launch(file: "").configuration()
        #expect(configuration.settings == PairSettings.defaults)
        let options = DaemonMain.runtimeOptions(configuration)
        #expect(options.engine.pair == PairSettings.defaults)
        #expect(options.engine.pair == EngineSettings(deviceName: "laptop").pair)
        let hydration = options.hydration, standalone = HydrationServer.Settings()
        #expect(hydration.refusedPrograms == standalone.refusedPrograms && hydration.rateLimit == standalone.rateLimit)
        #expect(hydration.fillTimeout == standalone.fillTimeout && hydration.minFreeSpace == standalone.minFreeSpace)
    }

    /// A setting given in the config file reaches the runtime with its value, and only it changes.
    @Test func aConfiguredSettingReachesTheRuntime() throws {
        let configuration = try Launch(file: "[watch]\nquiet-period = 5s\n[placeholders]\nhydrate-on-open = off\n").configuration()
        let options = DaemonMain.runtimeOptions(configuration)
        var expected = PairSettings.defaults
        expected.quietPeriod = .seconds(5)
        expected.hydrateOnOpen = false
        #expect(options.engine.pair == expected)
        #expect(options.quietPeriod == .seconds(5) && options.hydration.rateLimit == 0)
    }

    /// `Packaging/nimbus.conf.example` says it has "every key at its built-in default": with its
    /// keys uncommented (but the folders and the device name, which depend on the machine), it
    /// parses to exactly the defaults, and it names every key.
    @Test func theExampleConfigShowsTheDefaults() throws {
        let text = try String(contentsOfFile: Self.exampleConfig, encoding: .utf8)
        let machineDependent: Set<String> = ["local", "cloud", "name"]
        var uncommented: [String] = [], keys: Set<String> = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("["), line.hasSuffix("]") { uncommented.append(String(line)); continue }
            guard line.hasPrefix("#"), let equals = line.firstIndex(of: "=") else { continue }
            let key = line.dropFirst()[..<equals].trimmingCharacters(in: .whitespaces)
            guard !key.contains(" ") else { continue }  // a comment that happens to contain '='
            keys.insert(key)
            if !machineDependent.contains(key) { uncommented.append(String(line.dropFirst())) }
        }
        #expect(keys == Set(ConfigSetting.all.map(\.key)), "the example config does not name every key")
        let parsed = try Launch(file: uncommented.joined(separator: "\n")).configuration()
        let defaults = try Launch(file: "").configuration()
        #expect(parsed.settings == defaults.settings)
        #expect(parsed == defaults, "a key of the example config is not at its default")
    }
}
