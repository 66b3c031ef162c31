import Testing
@testable import NimbusDaemon
import NimbusProtocol

// Sizes, durations and spelling.
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
