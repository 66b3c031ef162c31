import Foundation
@testable import NimbusClient
import NimbusTestSupport
import Testing

/// The completion scripts know every command and option, and the shells accept them.
struct CompletionTests {
    @Test(arguments: Catalogue.shells)
    func everyCommandAndOptionIsCompleted(_ shell: String) {
        let script = Completions.script(for: shell)
        for command in Catalogue.commands {
            #expect(script.contains(command.name), "\(shell): \(command.name)")
            for option in command.options {
                #expect(script.contains(shell == "fish" ? "-l \(option.long)" : option.spelling), "\(shell): \(command.name) \(option.spelling)")
            }
        }
        for option in Catalogue.global {
            #expect(script.contains(shell == "fish" ? "-l \(option.long)" : option.spelling), "\(shell): \(option.spelling)")
        }
        for state in Catalogue.stateNames { #expect(script.contains(state), "\(shell): state \(state)") }
        for choice in Catalogue.keepChoices + Catalogue.shells { #expect(script.contains(choice)) }
    }

    /// `bash -n` (and `zsh -n`, `fish -n` where installed) parse the script without running it.
    @Test(arguments: Catalogue.shells)
    func theShellAcceptsTheScript(_ shell: String) throws {
        guard let executable = Self.find(shell) else {
            // bash is on every machine that runs these tests; the others are optional.
            #expect(shell != "bash", "bash is not installed, so the bash completion cannot be checked")
            print("note: \(shell) is not installed; the \(shell) completion script was not syntax-checked")
            return
        }
        let result = try Self.check(Completions.script(for: shell), with: executable)
        #expect(result.status == 0, "\(shell) -n: \(result.output)")
    }

    @Test func bashCompletesCommandsOptionsAndChoices() throws {
        guard let bash = Self.find("bash") else { return }
        func complete(_ line: String) throws -> [String] {
            let words = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            let probe = Completions.bash() + """
                COMP_WORDS=(\(words.map { "'\($0)'" }.joined(separator: " ")))
                COMP_CWORD=\(words.count - 1)
                _nimbusctl
                printf '%s\\n' "${COMPREPLY[@]}"
                """
            return try ShellCommand.run(bash, ["-c", probe]).output.split(separator: "\n").map(String.init)
        }
        #expect(try complete("nimbusctl sta") == ["status"])
        #expect(try complete("nimbusctl --json conf").sorted() == ["confirm-deletes", "conflicts"])
        #expect(try complete("nimbusctl ls --state not") == ["notDownloaded"])
        #expect(try complete("nimbusctl resolve x --keep ") == ["local", "cloud", "both"])
        #expect(try complete("nimbusctl completion f") == ["fish"])
        #expect(try complete("nimbusctl ls --rec") == ["--recursive"])
        #expect(try complete("nimbusctl --socket /tmp/s restore a --ver") == ["--version"])
    }

    static func find(_ program: String) -> String? {
        ["/bin", "/usr/bin", "/usr/local/bin"].map { "\($0)/\(program)" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func check(_ script: String, with shell: String) throws -> (status: Int32, output: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("nimbusctl-completion-\(UUID().uuidString)")
        try script.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try ShellCommand.run(shell, ["-n", file.path])
        return (result.status, result.output + result.error)
    }
}
