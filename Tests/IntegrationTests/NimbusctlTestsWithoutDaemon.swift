import Foundation
import Glibc
import NimbusTestTraits
import Testing
import NimbusTestSupport

/// What needs no daemon: usage errors (exit 64), help, version, completion; and colour.
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(2)))
struct NimbusctlTestsWithoutDaemon {
    func run(_ arguments: [String]) async throws -> CtlResult {
        try await Polling.blocking {
            try CtlHarness.run(NimbusdProcess.nimbusctl, arguments, environment: ["PATH": "/usr/bin:/bin"], currentDirectory: "/",
                               scratch: NSTemporaryDirectory())
        }
    }

    @Test(arguments: [
        (["stauts"], "did you mean 'status'?"),
        (["ls", "--recusive"], "did you mean '--recursive'?"),
        (["resolve", "a"], "needs --keep"),
        (["ls", "--state", "bogus"], "expected one of: local, uploading"),
        (["info"], "missing PATH"),
        (["status", "extra"], "unexpected argument 'extra'"),
    ])
    func usageErrorsExit64(_ arguments: [String], _ expected: String) async throws {
        let result = try await run(arguments)
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.contains(expected), "\(result)")
        #expect(result.stderr.contains("reason:") && result.stderr.contains("suggestion:"))
        let json = try await run(["--json"] + arguments)
        #expect(json.status == 64)
        #expect((try json.json()["error"] as? [String: Any])?["name"] as? String == "usage", "\(json)")
    }

    @Test func helpForEveryCommand() async throws {
        let overview = try await run(["--help"])
        #expect(overview.status == 0)
        let commands = ["status", "ls", "info", "download", "open", "evict", "pin", "unpin", "conflicts", "resolve",
                        "versions", "restore", "pause", "resume", "rescan", "confirm-deletes", "revert-deletes",
                        "watch", "completion"]
        // The commands side by side: 38 runs one after the other took more than the suite's
        // two minutes in loaded full runs, while hundreds of tests started at once.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for command in commands {
                #expect(overview.stdout.contains("    \(command) "), "\(command) missing from --help")
                group.addTask {
                    let help = try await run([command, "--help"])
                    #expect(help.status == 0 && help.stdout.contains("USAGE: nimbusctl \(command)"), "\(help)")
                    #expect(try await run(["help", command]).stdout == help.stdout)
                }
            }
            try await group.waitForAll()
        }
        #expect(overview.stdout.contains("EXIT STATUS") && overview.stdout.contains("69"))
        #expect(try await run(["--version"]).stdout == "nimbusctl 0.1.0\n")
    }

    @Test func theBashCompletionParses() async throws {
        let script = try await run(["completion", "bash"])
        #expect(script.status == 0)
        let file = NSTemporaryDirectory() + "/nimbusctl-completion-\(UUID().uuidString).bash"
        try script.stdout.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let check = try await Polling.blocking {
            try CtlHarness.run("/bin/bash", ["-n", file], environment: [:], currentDirectory: "/", scratch: NSTemporaryDirectory())
        }
        #expect(check.status == 0, "\(check)")
    }

    /// Colour needs a terminal: `script` gives nimbusctl a pseudo-terminal.
    @Test func colourOnlyOnATerminalAndNeverWithNoColor() async throws {
        try await CtlDaemon.with { daemon in try await colour(daemon) }
    }

    func colour(_ daemon: CtlDaemon) async throws {
        try daemon.write("a.txt", "x")
        try await daemon.waitForCloud("a.txt", "x")
        let escape = "\u{1B}["
        #expect(!(try await daemon.ctl(["ls"]).stdout.contains(escape)), "a pipe is not a terminal")
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else {
            Issue.record("/usr/bin/script (util-linux) is missing, so colour on a terminal cannot be checked")
            return
        }
        func onTerminal(_ extra: [String] = [], environment: [String: String] = [:]) async throws -> String {
            let line = ([NimbusdProcess.nimbusctl, "--socket", daemon.socket] + extra + ["ls"]).joined(separator: " ")
            let environment = daemon.environment.merging(["TERM": "xterm"].merging(environment) { $1 }) { $1 }
            let root = daemon.root
            return try await Polling.blocking {
                try CtlHarness.run("/usr/bin/script", ["-qec", line, "/dev/null"], environment: environment,
                                   currentDirectory: root, scratch: root).stdout
            }
        }
        #expect(try await onTerminal().contains(escape), "colour on a terminal")
        #expect(!(try await onTerminal(environment: ["NO_COLOR": "1"]).contains(escape)), "NO_COLOR=1")
        #expect(!(try await onTerminal(["--no-color"]).contains(escape)), "--no-color")
        #expect(try await onTerminal(environment: ["NO_COLOR": ""]).contains(escape), "an empty NO_COLOR is no preference")
    }
}
