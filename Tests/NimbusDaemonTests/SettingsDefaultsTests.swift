import Foundation
import NimbusTestSupport
import Testing
@testable import NimbusDaemon

/// Each default is stated once, in `PairSettings` (or `Configuration` for what only the start
/// reads): the config parser, the runtime, the hydration server and the example config file
/// all show the same values.
@Suite struct SettingsDefaultsTests {
    static let exampleConfig = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Packaging/nimbus.conf.example").standardized.path
    static let manPage = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Packaging/man/nimbus.conf.5").standardized.path

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

    /// `nimbus.conf(5)` writes each key's default by hand ("Default: 30s."): every one of them,
    /// given as the key's value, parses to exactly the built-in default (but the folders and
    /// the device name, which depend on the machine), and every key has one.
    @Test func theManPageStatesTheDefaults() throws {
        let stated = try Self.manPageDefaults(String(contentsOfFile: Self.manPage, encoding: .utf8))
        let machineDependent: Set<String> = ["[pair] local", "[pair] cloud", "[device] name"]
        let everyKey = Set(ConfigSetting.all.map { "[\($0.section)] \($0.key)" })
        #expect(Set(stated.keys) == everyKey, "keys without a default in the man page, or unknown ones")
        var bySection: [String: [String]] = [:]
        for (setting, value) in stated where !machineDependent.contains(setting) {
            let parts = setting.split(separator: " ", maxSplits: 1)
            bySection[String(parts[0]), default: []].append("\(parts[1]) = \(value)")
        }
        let text = bySection.map { section, lines in ([section] + lines).joined(separator: "\n") }.joined(separator: "\n")
        var parsed = try Launch(file: text).configuration()
        var defaults = try Launch(file: "").configuration()
        // The man page lists the refused programs in its own order.
        parsed.settings.refusedPrograms.sort()
        defaults.settings.refusedPrograms.sort()
        #expect(parsed.settings == defaults.settings, "a default in nimbus.conf(5) differs from PairSettings.defaults:\n\(text)")
        #expect(parsed == defaults, "a default in nimbus.conf(5) differs from the built-in one:\n\(text)")
    }

    /// "[section] key" → the text of its "Default:" in the man page: the rest of that line (up
    /// to the full stop, over several lines if need be), or the first argument of the next
    /// line's font macro (`.BR 30s .`), without roff's escapes.
    static func manPageDefaults(_ page: String) throws -> [String: String] {
        let lines = page.split(separator: "\n", omittingEmptySubsequences: false).map { $0.replacingOccurrences(of: "\\-", with: "-") }
        var defaults: [String: String] = [:]
        var section = "", key: String?
        for (index, line) in lines.enumerated() {
            if line.hasPrefix(".SS [") { section = String(line.dropFirst(4)) }
            if index > 0, lines[index - 1] == ".TP", let quote = line.firstIndex(of: "\""),
               let equals = line[quote...].range(of: " =") {
                key = String(line[line.index(after: quote)..<equals.lowerBound])
            }
            guard line.hasPrefix("Default:"), let key else { continue }
            var text = line.dropFirst("Default:".count).trimmingCharacters(in: .whitespaces)
            if text.isEmpty {
                guard index + 1 < lines.count else { throw HarnessFailure("nothing after Default: of \(key)") }
                text = lines[index + 1].split(separator: " ").dropFirst().first.map(String.init) ?? ""
            } else {
                var next = index + 1
                while !text.hasSuffix("."), next < lines.count, !lines[next].hasPrefix(".") {
                    text += " " + lines[next]
                    next += 1
                }
                text = String(text.dropLast())
            }
            defaults["\(section) \(key)"] = text
        }
        return defaults
    }
}
