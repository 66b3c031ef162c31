import Glibc
@testable import NimbusClient
import NimbusSystem
import NimbusTestTraits
import NimbusVocabulary
import Testing

/// `nimbusctl lock` on the command line: what it accepts, what it refuses (exit status 64),
/// and how its help and completions show it.
struct LockCommandTests {
    static let accepted: [([String], Command)] = [
        (["lock", "notes.db", "--", "sqlite3", "notes.db", "VACUUM"],
         .lock(path: "notes.db", shared: false, wait: nil, command: ["sqlite3", "notes.db", "VACUUM"])),
        (["lock", "--shared", "Photos", "--", "tar", "cf", "-", "Photos"],
         .lock(path: "Photos", shared: true, wait: nil, command: ["tar", "cf", "-", "Photos"])),
        (["lock", "--wait", "2.5", "a", "--", "true"], .lock(path: "a", shared: false, wait: 2.5, command: ["true"])),
        (["lock", "a", "--wait=0", "--shared", "--", "true"], .lock(path: "a", shared: true, wait: 0, command: ["true"])),
        // After `--` everything is the command's, options and all (nimbusctl's --help too).
        (["lock", "a", "--", "sh", "-c", "echo --help", "--json", "--"],
         .lock(path: "a", shared: false, wait: nil, command: ["sh", "-c", "echo --help", "--json", "--"])),
        (["lock", "-", "--", "true"], .lock(path: "-", shared: false, wait: nil, command: ["true"])),
        (["locks"], .locks),
    ]

    @Test(arguments: accepted.indices)
    func accepts(_ index: Int) throws {
        let (line, command) = Self.accepted[index]
        #expect(try ArgumentParser.parse(line).command == command, "\(line)")
    }

    @Test func globalOptionsBeforeTheSeparator() throws {
        let invocation = try ArgumentParser.parse(["--socket", "/s", "lock", "a", "--json", "--", "ls", "-l"])
        #expect(invocation.global.socket == "/s")
        #expect(invocation.global.json)
        #expect(invocation.command == .lock(path: "a", shared: false, wait: nil, command: ["ls", "-l"]))
    }

    static let refused: [(line: [String], says: String)] = [
        (["lock"], "missing PATH"),
        (["lock", "a"], "missing the command to run"),
        (["lock", "a", "--"], "missing the command to run"),
        (["lock", "--", "true"], "missing PATH"),
        (["lock", "a", "true"], "must follow '--'"),
        (["lock", "a", "b", "--", "true"], "must follow '--'"),
        (["lock", "--wait", "soon", "a", "--", "true"], "invalid value 'soon' for --wait"),
        (["lock", "--wait", "-1", "a", "--", "true"], "invalid value '-1' for --wait: it must be 0 or more"),
        (["lock", "--wait", "-0.5", "a", "--", "true"], "invalid value '-0.5' for --wait: it must be 0 or more"),
        (["lock", "--wait=-1", "a", "--", "true"], "invalid value '-1' for --wait: it must be 0 or more"),
        (["lock", "--wait", "nan", "a", "--", "true"], "invalid value 'nan' for --wait"),
        (["lock", "--wait", "1", "--wait", "2", "a", "--", "true"], "--wait is given twice"),
        (["lock", "--bogus", "a", "--", "true"], "unknown option '--bogus'"),
        (["lock", "a", "--", ""], "the command to run is empty"),
        (["locks", "extra"], "unexpected argument 'extra'"),
    ]

    @Test(arguments: refused.indices)
    func refuses(_ index: Int) {
        let (line, says) = Self.refused[index]
        do {
            let invocation = try ArgumentParser.parse(line)
            Issue.record("\(line) parsed as \(invocation)")
        } catch {
            #expect(error.message.contains(says), "\(line): \(error)")
            #expect(Failure(error).exitCode == 64)
            #expect(error.suggestion.contains("nimbusctl lock") || line.first == "locks", "\(error)")
        }
    }

    @Test func helpShowsTheCommandLineOfLock() throws {
        #expect(try ArgumentParser.parse(["lock", "--help"]).command == .help(topic: "lock"))
        #expect(try ArgumentParser.parse(["lock", "a", "--bogus", "--help"]).command == .help(topic: "lock"))
        let help = HelpText.command(LockCommand.spec)
        #expect(help.contains("USAGE: nimbusctl lock [--shared] [--wait SECONDS] PATH -- COMMAND [ARGS...]"), "\(help)")
        #expect(help.contains("--wait SECONDS"))
        #expect(help.contains("127 COMMAND"))
        let overview = HelpText.overview()
        #expect(overview.contains("lock") && overview.contains("Run a command while holding a lease on a path"))
        #expect(overview.contains("locks"))
    }

    @Test func completionsKnowLockAndItsOptions() {
        let bash = Completions.script(for: "bash")
        #expect(bash.contains("lock)") && bash.contains("--shared --wait"), "\(bash)")
        #expect(bash.contains("--wait) COMPREPLY=()"))
        let zsh = Completions.script(for: "zsh")
        #expect(zsh.contains("'lock:Run a command while holding a lease on a path'"))
        #expect(zsh.contains("lock) _arguments") && zsh.contains("'--wait["))
        let fish = Completions.script(for: "fish")
        #expect(fish.contains("-a lock -d 'Run a command while holding a lease on a path'"))
        #expect(fish.contains("__fish_seen_subcommand_from lock\" -l shared"))
        #expect(fish.contains("__fish_seen_subcommand_from lock\" -l wait -x"))
    }

    /// The command's status as a shell gives it: its exit code, or 128 + N for signal N.
    @Test func exitStatusOfTheCommand() throws {
        #expect(try ChildProcess.wait(try ChildProcess.spawn("sh", arguments: ["-c", "exit 3"])) == 3)
        #expect(try ChildProcess.wait(try ChildProcess.spawn("sh", arguments: ["-c", "kill -9 $$"])) == 137)
        #expect(throws: Errno.noSuchFile.at("start", "nimbus-no-such-program")) {
            try ChildProcess.spawn("nimbus-no-such-program", arguments: [])
        }
    }

    /// nimbusctl waits for a command (lock, open) without holding a thread of the pool: the
    /// task that ends the command runs meanwhile on the same single thread (a blocking wait
    /// would hold it until `sleep 20` ended by itself, exit status 0).
    @Test(.onAThreadOfItsOwn(timeLimit: .minutes(1))) func waitingForTheCommandLeavesTheThreadToOthers() async throws {
        let pid = try ChildProcess.spawn("sh", arguments: ["-c", "exec sleep 20"])
        let status = try await withThrowingTaskGroup(of: Int32?.self) { group in
            group.addTask { try await ChildProcess.exitStatus(of: pid) }
            group.addTask {
                kill(pid, SIGTERM)
                return nil
            }
            var status: Int32?
            for try await result in group { status = status ?? result }
            return status
        }
        #expect(status == 128 + SIGTERM)
    }

    @Test func findsProgramsLikeExecvp() {
        let environment = ["PATH": "/nonexistent:/bin:/usr/bin"]
        guard case .found(let sh) = LockCommand.find("sh", environment: environment) else {
            Issue.record("sh not found on /bin:/usr/bin")
            return
        }
        #expect(sh.hasSuffix("/sh"))
        #expect(LockCommand.find("no-such-program-xyz", environment: environment) == .notFound)
        #expect(LockCommand.find("/no/such/file", environment: environment) == .notFound)
        #expect(LockCommand.find("/etc/hostname", environment: environment) == .notExecutable("/etc/hostname")
                || LockCommand.find("/etc/passwd", environment: environment) == .notExecutable("/etc/passwd"))
    }

    @Test func rendersLocks() {
        #expect(LockCommand.render([]) == "No leases are held or waited for.")
    }
}
