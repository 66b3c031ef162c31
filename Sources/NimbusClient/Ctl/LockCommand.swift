import FoundationEssentials
import NimbusSystem
import NimbusProtocol

/// `nimbusctl lock [--shared] [--wait SECONDS] PATH -- COMMAND [ARGS...]` (issue #8): runs
/// COMMAND while holding a lease on PATH, like flock(1), and exits with its status. The lease
/// belongs to nimbusctl's connection, so the daemon drops it when nimbusctl ends, however.
enum LockCommand {
    static let spec = CommandSpec(
        name: "lock", summary: "Run a command while holding a lease on a path",
        discussion: """
            While the lease is held the daemon neither uploads, downloads, evicts, renames nor deletes PATH \
            (a folder: everything in it); changes made under an exclusive lease sync right after it ends.
            The lease is exclusive (one writer, nothing else on the path, above it or below it) unless \
            --shared (readers, any number at once). Without --wait, a busy path is waited for as long as it takes.
            Exit status: COMMAND's own (128+N when signal N ended it); 1 when PATH stayed busy for \
            --wait SECONDS or the daemon refused; 64 usage error; 126 COMMAND cannot be run; 127 COMMAND \
            not found; 69 the daemon is not reachable.
            """,
        arguments: [
            ArgumentSpec(name: "PATH", count: .one, help: "The file or folder to lock"),
            ArgumentSpec(name: "PROGRAM", count: .oneOrMore, help: "The command to run, with its arguments, after '--'",
                         display: "-- COMMAND [ARGS...]"),
        ],
        options: [
            OptionSpec(long: "shared", help: "Take a shared (read) lease instead of an exclusive (write) one"),
            OptionSpec(long: "wait", value: "SECONDS",
                       help: "Wait at most SECONDS for a busy path, then fail (0: only if free now)"),
        ],
        examples: ["nimbusctl lock Mail -- mbsync -a",
                   "nimbusctl lock --wait 10 notes.db -- sqlite3 notes.db 'VACUUM'",
                   "nimbusctl lock --shared Photos -- tar cf /backup/photos.tar Photos"],
        optionsFirst: true)

    /// The checks the generic parser cannot make: the command comes after `--`, and
    /// `--wait` is a number of seconds.
    static func check(_ words: ParsedWords, separatorAt: Int?) throws(UsageError) {
        let count = words.positionals.count
        if count == 0 || separatorAt == -1 || separatorAt == 0 {
            throw .invalid("missing PATH for 'nimbusctl lock'", reason: "expected the file or folder to lock before '--'",
                           command: spec)
        }
        guard let separatorAt, separatorAt == 1 else {
            if count > 1 {
                throw .invalid("the command to run must follow '--'",
                               reason: "'nimbusctl lock' takes one PATH, then '--', then the command ('\(words.positionals[1])' came before '--')",
                               command: spec)
            }
            throw .invalid("missing the command to run", reason: "expected '--' and a command after PATH", command: spec)
        }
        guard count > 1 else {
            throw .invalid("missing the command to run", reason: "expected a command after '--'", command: spec)
        }
        if words.positionals[1].isEmpty {
            throw .invalid("the command to run is empty", reason: "expected a program name after '--'", command: spec)
        }
        if let wait = words.value("wait") {
            guard let seconds = Double(wait), seconds.isFinite else {
                throw .invalid("invalid value '\(wait)' for --wait",
                               reason: "expected a number of seconds, 0 or more (such as 5 or 0.5)", command: spec)
            }
            guard seconds >= 0 else {
                throw .invalid("invalid value '\(wait)' for --wait: it must be 0 or more",
                               reason: "--wait is how many seconds to wait for the path (0: only if it is free now)", command: spec)
            }
        }
    }

    static func command(_ words: ParsedWords) -> Command {
        .lock(path: words.first, shared: words.flag("shared"), wait: words.value("wait").flatMap(Double.init),
              command: Array(words.positionals.dropFirst()))
    }

    /// Where `name` is run from: itself when it holds a slash, else the first executable of
    /// that name on `PATH` (as execvp does).
    enum Lookup: Equatable {
        case found(String)
        case notFound
        case notExecutable(String)
    }

    static func find(_ name: String, environment: [String: String]) -> Lookup {
        if name.contains("/") {
            switch ProcessSupport.programCheck(name) {
            case .missing: return .notFound
            case .notExecutable: return .notExecutable(name)
            case .executable: return .found(name)
            }
        }
        var denied: String?
        let search = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in search.split(separator: ":", omittingEmptySubsequences: false) {
            let candidate = (directory.isEmpty ? "." : String(directory)) + "/" + name
            switch ProcessSupport.programCheck(candidate) {
            case .missing: continue
            case .notExecutable: denied = denied ?? candidate
            case .executable: return .found(candidate)
            }
        }
        return denied.map { .notExecutable($0) } ?? .notFound
    }

    /// `nimbusctl locks`: one line per lease.
    static func render(_ locks: [LeaseInfo]) -> String {
        guard !locks.isEmpty else { return "No leases are held or waited for." }
        let rows = locks.map { lock -> [String] in
            let owner = lock.mine ? "this connection" : lock.owner.map { "connection \($0)" } ?? "the daemon"
            return ["\(lock.lease)", lock.mode, lock.state, owner, lock.path.isEmpty ? "(the whole folder)" : lock.path]
        }
        let header = ["LEASE", "MODE", "STATE", "HOLDER", "PATH"]
        let widths = (0..<header.count).map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { row in
            row.enumerated().map { column, text in
                column == row.count - 1 ? text : text + String(repeating: " ", count: widths[column] - text.count)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}

extension Session {
    /// Acquires the lease, runs the command with it held, releases it, and returns the
    /// command's exit status.
    func lock(_ argument: String, shared: Bool, wait: Double?, command: [String]) async throws -> Int32 {
        let path = try resolver.protocolPath(argument)
        let name = command[0]
        let executable: String
        switch LockCommand.find(name, environment: resolver.environment) {
        case .found(let found):
            executable = found
        case .notFound:
            throw Failure(name: "command_not_found", message: "\(name): command not found",
                          reason: name.contains("/") ? "there is no file \(name)" : "no program called \(name) is on PATH",
                          suggestion: "check the spelling, or give the program's full path", exitCode: 127)
        case .notExecutable(let file):
            throw Failure(name: "cannot_execute", message: "\(name): cannot run \(file)",
                          reason: "it is not an executable file (permission denied)",
                          suggestion: "make it executable (chmod +x \(file)) or run it through its interpreter",
                          exitCode: 126)
        }
        let shown = path.isEmpty ? "the whole synced folder" : TerminalText.printable(path)
        let lease: AcquireResult
        do {
            lease = try await connection.acquire(path, mode: shared ? .shared : .exclusive, timeout: wait)
        } catch let error as NimbusClientError where error.name == ErrorName.busy.rawValue {
            let waited = wait == 0 ? "it was not free and --wait 0 asks for a free path only"
                : "it was still locked after waiting \(Format.number(wait ?? 0)) s (--wait)"
            throw Failure(name: error.name, code: error.code, message: "\(shown) is busy: another program holds a lease on it",
                          reason: waited + " (" + error.reason + ")",
                          suggestion: "see who holds it with 'nimbusctl locks'; wait longer with --wait SECONDS, or leave --wait out to wait as long as it takes",
                          exitCode: Failure.operationFailed, path: path)
        }
        let status = try await run(executable, arguments: Array(command.dropFirst()), name: name)
        do {
            try await connection.release(lease.lease)
        } catch let error as NimbusClientError {
            // The connection ended while the command ran: the daemon dropped the lease then.
            console.err("warning: the lease on \(shown) was lost before '\(name)' ended: \(error.message) (\(error.reason))")
        }
        return status
    }

    /// Runs the program with nimbusctl's stdin, stdout, stderr and environment, and waits
    /// (on a thread of its own, so the connection holding the lease keeps being served).
    func run(_ executable: String, arguments: [String], name: String) async throws -> Int32 {
        try await ChildProcess.ignoringInterrupts {
            let pid: Int32
            do {
                pid = try ChildProcess.spawn(executable, arguments: arguments,
                                             environment: resolver.environment.isEmpty ? nil : resolver.environment)
            } catch {
                throw Failure(name: "cannot_execute", message: "\(name): cannot run \(executable)",
                              reason: "\(error)", suggestion: "check that it is a program you may run", exitCode: 126)
            }
            return try await ChildProcess.exitStatus(of: pid)
        }
    }
}
