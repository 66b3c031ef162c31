import Glibc
@testable import NimbusClient
import NimbusTestSupport
import Testing

struct FormattingTests {
    static let sizes: [(Int64, String)] = [
        (0, "0 B"), (999, "999 B"), (1000, "1.0 kB"), (1234, "1.2 kB"), (12_345, "12.3 kB"),
        (123_456, "123 kB"), (999_499, "999 kB"), (999_950, "1.0 MB"), (1_200_000, "1.2 MB"),
        (2_200_000_000, "2.2 GB"), (5_000_000_000_000, "5.0 TB"), (-1500, "-1.5 kB"),
    ]

    @Test func sizes() {
        for (bytes, expected) in Self.sizes {
            #expect(Format.size(bytes) == expected, "\(bytes)")
        }
    }

    static let now = 1_700_000_000.0

    static let ages: [(Double, String)] = [
        (0, "just now"), (4, "just now"), (42, "42 s ago"), (60, "1 min ago"), (239, "3 min ago"),
        (3600, "1 h ago"), (18_000, "5 h ago"), (86_400, "yesterday"), (172_800, "2 days ago"),
        (2_505_600, "29 days ago"), (-180, "in 3 min"),
    ]

    @Test func relativeTimes() {
        for (age, expected) in Self.ages {
            #expect(Format.relativeTime(Self.now - age, now: Self.now) == expected, "\(age)")
        }
    }

    @Test func oldTimesShowTheDate() {
        // 1 700 000 000 s is 2023-11-14 22:13:20 UTC.
        #expect(Format.relativeTime(Self.now - 40 * 86_400, now: Self.now) == "2023-10-05")
        #expect(Format.date(Self.now) == "2023-11-14")
        #expect(Format.date(0) == "1970-01-01")
        #expect(Format.date(951_782_400) == "2000-02-29")
        #expect(Format.clock(Self.now) == "22:13:20")
        // Before 1970: the second the time falls in, as CivilTime has it.
        #expect(Format.date(-0.5) == "1969-12-31" && Format.clock(-0.5) == "23:59:59")
        #expect(Format.date(-1.5) == "1969-12-31" && Format.clock(-1.5) == "23:59:58")
        #expect(Format.date(-2_203_891_200) == "1900-03-01" && Format.date(-2_203_891_200.5) == "1900-02-28")
        #expect(Format.date(.nan) == "1970-01-01" && !Format.date(.infinity).isEmpty, "no trap on a wild value")
    }

    /// The date and clock nimbusctl prints agree with glibc's `gmtime_r` for times from year 0
    /// to 9999, fractions before 1970 included (the second a time falls in).
    @Test func datesAndClocksAgreeWithGmtime() throws {
        var random = SeededRandom.forTest("FormattingTests.datesAndClocksAgreeWithGmtime")
        func padded(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        for _ in 0..<5000 {
            let whole = Int64.random(in: -62_167_219_200...253_402_300_799, using: &random)
            let seconds = Double(whole) + Double(random.next(below: 1000)) / 1000
            var time = time_t(whole)
            var parts = tm()
            try #require(gmtime_r(&time, &parts) != nil, "seed \(random.seed): \(whole)")
            let date = "\(padded(parts.tm_year + 1900, 4))-\(padded(parts.tm_mon + 1, 2))-\(padded(parts.tm_mday, 2))"
            let clock = "\(padded(parts.tm_hour, 2)):\(padded(parts.tm_min, 2)):\(padded(parts.tm_sec, 2))"
            #expect(Format.date(seconds) == date && Format.clock(seconds) == clock, "seed \(random.seed): \(seconds) s")
        }
    }

    @Test func percentsAndCounts() {
        #expect(Format.percent(0) == "0%")
        #expect(Format.percent(0.526) == "52%")
        #expect(Format.percent(1.3) == "100%")
        #expect(Format.count(1, "file") == "1 file")
        #expect(Format.count(3, "file") == "3 files")
        #expect(Format.count(2, "entry", "entries") == "2 entries")
    }

    @Test func everyStateHasItsOwnSymbol() {
        let expected = ["local": "•", "uploading": "↑", "notDownloaded": "☁", "downloading": "↓",
                        "downloaded": "✓", "outdated": "⟳", "conflict": "!", "error": "✗"]
        for state in Catalogue.stateNames {
            #expect(StateSymbol.symbol(state) == expected[state], "\(state)")
        }
        #expect(Set(Catalogue.stateNames.map(StateSymbol.symbol)).count == Catalogue.stateNames.count)
        #expect(StateSymbol.paint("error") == .red)
        #expect(StateSymbol.paint("downloaded") == .green)
        #expect(StateSymbol.legend.contains("☁ notDownloaded"))
        #expect(StateSymbol.words("downloaded") == "in sync")
    }

    @Test func timesOfTheCommandLine() {
        let now = 1_700_000_000.0
        #expect(Format.parseTime("2h", now: now, utcOffsetSeconds: 0) == Int64(now - 7200) * 1_000_000_000)
        #expect(Format.parseTime("30min", now: now, utcOffsetSeconds: 0) == Int64(now - 1800) * 1_000_000_000)
        #expect(Format.parseTime("3d", now: now, utcOffsetSeconds: 0) == Int64(now - 3 * 86_400) * 1_000_000_000)
        #expect(Format.parseTime("1970-01-02", now: now, utcOffsetSeconds: 0) == 86_400_000_000_000)
        #expect(Format.parseTime("2023-11-14T22:13:20Z", now: now, utcOffsetSeconds: 3600) == 1_700_000_000_000_000_000)
        #expect(Format.parseTime("2023-11-14 23:13:20", now: now, utcOffsetSeconds: 3600) == 1_700_000_000_000_000_000,
                "local time is UTC + offset")
        #expect(Format.parseTime("2023-11-14 23:13", now: now, utcOffsetSeconds: 3600) == 1_699_999_980_000_000_000)
        // Fractions of a second, to the nanosecond: versions are stamped so.
        #expect(Format.parseTime("2023-11-14T22:13:20.5Z", now: now, utcOffsetSeconds: 0) == 1_700_000_000_500_000_000)
        #expect(Format.parseTime("2023-11-14 23:13:20.000000001", now: now, utcOffsetSeconds: 3600) == 1_700_000_000_000_000_001)
        #expect(Format.parseTime("2023-11-14T22:13:20.123456789Z", now: now, utcOffsetSeconds: 0) == 1_700_000_000_123_456_789)
        for bad in ["yesterday", "2023-13-01", "2023-11-14 25:00", "", "2h30", "14:30", "2023-1-5",
                    "2023-11-14 22:13:20.", "2023-11-14 22:13:20.1234567890", "2023-11-14 22:13.5", "2023-11-14 22:13:20.-5",
                    "2023-11-14 22:13:20.5.5", "2023-11-14 22:13:20.+5"] {
            #expect(Format.parseTime(bad, now: now, utcOffsetSeconds: 0) == nil, "\(bad)")
        }
    }
}

struct TableTests {
    @Test func columnsAlignAndTheLastIsNotPadded() {
        var table = Table([.left, .right, .left])
        table.add(["a", "1 B", "x"])
        table.add(["longer", "12.3 kB", "y"])
        #expect(table.lines(color: false) == [
            "a           1 B  x",
            "longer  12.3 kB  y",
        ])
    }

    @Test func colourDoesNotMoveTheColumns() {
        var table = Table([.left, .left])
        table.add([Table.Cell("✓", .green), "a.txt"])
        table.add([Table.Cell("!!", .yellow), "b.txt"])
        let plain = table.lines(color: false)
        let colored = table.lines(color: true)
        #expect(plain == ["✓   a.txt", "!!  b.txt"])
        #expect(colored[0] == "\u{1B}[32m✓\u{1B}[0m   a.txt")
        #expect(colored.map(stripEscapes) == plain)
    }

    @Test func wideCharactersTakeTwoColumns() {
        #expect(DisplayWidth.of("abc") == 3)
        #expect(DisplayWidth.of("日本") == 4)
        #expect(DisplayWidth.of("☁✓⟳•") == 4)
        #expect(DisplayWidth.of("e\u{301}") == 1)
        var table = Table([.left, .left])
        table.add(["日本", "x"])
        table.add(["abcde", "y"])
        #expect(table.lines(color: false) == ["日本   x", "abcde  y"])
    }
}

struct ProgressBarTests {
    @Test func theLineFitsTheTerminal() {
        for width in [20, 40, 80, 200] {
            let line = ProgressBar.line(label: "Archive/Photos/2024/IMG_0001.jpg", fraction: 0.55, detail: "1 of 3", width: width)
            #expect(DisplayWidth.of(line) <= max(width - 1, 20), "width \(width): \(line)")
            #expect(line.contains("55%"))
        }
        let wide = ProgressBar.line(label: "a.bin", fraction: 0.5, detail: "", width: 80)
        #expect(wide == "a.bin  [" + String(repeating: "█", count: 15) + String(repeating: "░", count: 15) + "]   50%")
    }

    @Test func longLabelsKeepTheirEnd() {
        #expect(ProgressBar.shorten("Archive/Photos/2024/IMG_0001.jpg", to: 14) == "…/IMG_0001.jpg")
        #expect(ProgressBar.shorten("short", to: 14) == "short")
        #expect(ProgressBar.cells(0.5, width: 4) == "██░░")
        #expect(ProgressBar.cells(2, width: 4) == "████")
    }
}

/// The text without ANSI escape sequences.
func stripEscapes(_ text: String) -> String {
    var result = ""
    var inEscape = false
    for character in text {
        if character == "\u{1B}" {
            inEscape = true
        } else if inEscape {
            if character == "m" { inEscape = false }
        } else {
            result.append(character)
        }
    }
    return result
}
