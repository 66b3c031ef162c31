import Testing
@testable import NimbusDaemon
import NimbusProtocol
import NimbusTestSupport

// Command-line errors: exit 64, with a pointer to --help.
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
            guard case let .help(text) = try Launch().outcome(["--bogus", "-h"]) else { throw HarnessFailure("no help") }
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
            guard case let .help(work) = try Launch().outcome(["--instance", "work", "--help"]) else { throw HarnessFailure("no help") }
            #expect(work.contains("/home/u/.config/nimbus/work.conf") && work.contains("nimbus/work.sock"))
        }
    }
}
