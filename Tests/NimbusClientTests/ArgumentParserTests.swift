@testable import NimbusClient
import Testing

/// Every command line nimbusctl accepts, and how it refuses the others.
struct ArgumentParserTests {
    static let accepted: [(line: String, command: Command)] = [
        ("status", .status),
        ("ls", .list(path: nil, recursive: false, state: nil)),
        ("ls Photos -r --state conflict", .list(path: "Photos", recursive: true, state: "conflict")),
        ("ls --recursive --state=not-downloaded", .list(path: nil, recursive: true, state: "notDownloaded")),
        ("info a/b.txt", .info(path: "a/b.txt")),
        ("download a b c", .download(paths: ["a", "b", "c"], wait: true)),
        ("download --no-wait a", .download(paths: ["a"], wait: false)),
        ("open report.pdf.nimbus", .open(path: "report.pdf.nimbus")),
        ("evict a b", .evict(paths: ["a", "b"])),
        ("pin a", .pin(paths: ["a"])),
        ("unpin a", .unpin(paths: ["a"])),
        ("conflicts", .conflicts),
        ("resolve notes.txt --keep both", .resolve(path: "notes.txt", keep: "both")),
        ("resolve --keep=LOCAL notes.txt", .resolve(path: "notes.txt", keep: "local")),
        ("versions notes.txt", .versions(path: "notes.txt", all: false)),
        ("versions --all", .versions(path: nil, all: true)),
        ("versions --all Docs", .versions(path: "Docs", all: true)),
        ("restore docs --at 2h --dry-run", .restore(path: "docs", version: nil, to: nil, at: "2h", dryRun: true)),
        // A negative number is the option's value (its own check refuses it), not an option.
        ("restore docs --at -2h", .restore(path: "docs", version: nil, to: nil, at: "-2h")),
        ("prune", .prune),
        ("restore notes.txt", .restore(path: "notes.txt", version: nil, to: nil)),
        ("restore notes.txt --version 3 --to old.txt", .restore(path: "notes.txt", version: "3", to: "old.txt")),
        ("pause", .pause),
        ("resume", .resume),
        ("rescan", .rescan),
        ("confirm-deletes", .confirmDeletes),
        ("revert-deletes", .revertDeletes),
        ("watch", .watch),
        ("lock --shared --wait 5 Mail -- mbsync -a", .lock(path: "Mail", shared: true, wait: 5, command: ["mbsync", "-a"])),
        ("locks", .locks),
        ("completion bash", .completion(shell: "bash")),
        ("completion zsh", .completion(shell: "zsh")),
        ("completion fish", .completion(shell: "fish")),
        ("help", .help(topic: nil)),
        ("help ls", .help(topic: "ls")),
        ("ls --help", .help(topic: "ls")),
        ("-h", .help(topic: nil)),
        ("ls -rh", .help(topic: "ls")),
        ("ls --bogus --help", .help(topic: "ls")),
        ("--version", .version),
        ("status --version", .version),
        ("info -- -odd-name", .info(path: "-odd-name")),
        ("info -", .info(path: "-")),
    ]

    @Test(arguments: accepted.indices)
    func accepts(_ index: Int) throws {
        let (line, command) = Self.accepted[index]
        #expect(try ArgumentParser.parse(words(line)).command == command, "\(line)")
    }

    @Test func everyCommandOfTheCatalogueIsCovered() {
        let covered = Set(Self.accepted.map { words($0.line).first! })
        for command in Catalogue.commands {
            #expect(covered.contains(command.name), "no parse test for \(command.name)")
        }
    }

    @Test func noArgumentsShowsTheOverview() throws {
        #expect(try ArgumentParser.parse([]).command == .help(topic: nil))
    }

    @Test func globalOptionsGoAnywhere() throws {
        let before = try ArgumentParser.parse(words("--socket /s --json --no-color ls -r"))
        let after = try ArgumentParser.parse(words("ls -r --json --socket=/s --no-color"))
        for invocation in [before, after] {
            #expect(invocation.global == GlobalOptions(instance: nil, socket: "/s", json: true, noColor: true))
            #expect(invocation.command == .list(path: nil, recursive: true, state: nil))
        }
        #expect(try ArgumentParser.parse(words("--instance work status")).global.instance == "work")
    }

    // MARK: Refusals

    static let refused: [(line: String, message: String, hint: String)] = [
        ("stauts", "unknown command 'stauts'", "did you mean 'status'?"),
        ("conflict", "unknown command 'conflict'", "did you mean 'conflicts'?"),
        ("ls --recusive", "unknown option '--recusive' for 'ls'", "did you mean '--recursive'?"),
        ("ls --stat x", "unknown option '--stat' for 'ls'", "did you mean '--state'?"),
        ("ls --state notdownloded", "invalid value 'notdownloded' for --state", "did you mean 'notDownloaded'?"),
        ("ls --keep both", "unknown option '--keep' for 'ls'", "--keep belongs to 'nimbusctl resolve'"),
        ("resolve a --keep lcoal", "invalid value 'lcoal' for --keep", "did you mean 'local'?"),
        ("completion bsh", "invalid value 'bsh' for SHELL", "did you mean 'bash'?"),
        ("help stauts", "invalid value 'stauts' for COMMAND", "did you mean 'status'?"),
        ("info", "missing PATH for 'nimbusctl info'", "usage: nimbusctl info PATH"),
        ("download", "missing PATH for 'nimbusctl download'", "usage: nimbusctl download PATH..."),
        ("resolve a", "'nimbusctl resolve' needs --keep", "usage: nimbusctl resolve PATH --keep local|cloud|both"),
        ("status now", "unexpected argument 'now'", "usage: nimbusctl status"),
        ("info a b", "unexpected argument 'b'", "usage: nimbusctl info PATH"),
        ("ls --state", "--state needs a value", "usage: nimbusctl ls"),
        ("ls --state -r", "--state needs a value", "usage: nimbusctl ls"),
        ("ls --state=", "--state needs a value", "usage: nimbusctl ls"),
        ("ls -r=1", "unknown option '-r=1' for 'ls'", "see 'nimbusctl ls --help'"),
        ("ls --recursive=yes", "--recursive takes no value", "usage: nimbusctl ls"),
        ("restore a --to x --to y", "--to is given twice", "give it once"),
        ("--instance a --socket /s status", "--instance and --socket cannot be used together", "give only one"),
        ("--instance ../x status", "invalid instance name '../x'", "nimbusctl --help"),
        ("--json", "no command given", "nimbusctl --help"),
        ("-x status", "unknown option '-x'", "see 'nimbusctl --help'"),
    ]

    @Test(arguments: refused.indices)
    func refuses(_ index: Int) {
        let (line, message, hint) = Self.refused[index]
        do {
            let parsed = try ArgumentParser.parse(words(line))
            Issue.record("\(line) parsed as \(parsed)")
        } catch {
            #expect(error.message == message, "\(line)")
            #expect(error.suggestion.contains(hint), "\(line): \(error.suggestion)")
            #expect(!error.reason.isEmpty)
        }
    }

    @Test func anUnknownCommandListsWhatWasExpected() {
        #expect(throws: UsageError.self) { try ArgumentParser.parse(["frobnicate"]) }
        do {
            _ = try ArgumentParser.parse(["frobnicate"])
        } catch {
            #expect(error.reason.contains("status, ls, info"))
            #expect(error.suggestion == "see 'nimbusctl --help'")
        }
    }

    @Test func usageErrorsExit64WithMessageReasonAndSuggestion() async {
        let console = RecordingConsole()
        let status = await NimbusCtl.run(arguments: ["stauts"], environment: [:], console: console.console)
        #expect(status == 64)
        let error = console.error
        #expect(error.contains("error: unknown command 'stauts'"))
        #expect(error.contains("reason: expected a command"))
        #expect(error.contains("suggestion: did you mean 'status'?"))
        #expect(console.output.isEmpty)
    }

    @Test func usageErrorsWithJSONGoToStandardOutput() async throws {
        let console = RecordingConsole()
        let status = await NimbusCtl.run(arguments: ["--json", "info"], environment: [:], console: console.console)
        #expect(status == 64)
        let error = try #require(try console.outputJSON()["error"])
        #expect(error["name"] == .string("usage"))
        #expect(error["exitCode"] == .integer(64))
        #expect(error["message"] == .string("missing PATH for 'nimbusctl info'"))
        #expect(error["reason"] != nil && error["suggestion"] != nil)
        #expect(console.error.isEmpty)
    }

    @Test func helpVersionAndCompletionNeedNoDaemon() async {
        for line in ["--help", "help restore", "ls -h", "--version", "completion fish"] {
            let console = RecordingConsole()
            let status = await NimbusCtl.run(arguments: words(line), environment: [:], console: console.console)
            #expect(status == 0, "\(line)")
            #expect(!console.output.isEmpty, "\(line)")
        }
    }
}

func words(_ line: String) -> [String] {
    line.split(separator: " ").map(String.init)
}
