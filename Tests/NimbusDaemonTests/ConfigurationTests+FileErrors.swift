import Testing
@testable import NimbusDaemon
import NimbusProtocol

// Config file errors: exit 78, naming the file, the line and the key.
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
