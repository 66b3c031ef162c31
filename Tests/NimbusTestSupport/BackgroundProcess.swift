import Foundation
import Glibc
import NimbusSystem
import Synchronization

/// A child process a test keeps running beside it (nimbusd, `nimbusctl watch`, a reader
/// holding a file open), its output appended to files. It is started through
/// `ChildProcess.spawn`, so it inherits no descriptor of the test process (an inherited pipe
/// would keep another test waiting): a shell opens the files in place of stdin, stdout and
/// stderr, moves to the working directory and replaces itself with the program (same pid).
/// The exit status, which any thread may collect with waitpid(2), is behind a lock. It dies
/// with the test process, even one that crashes (`SpawningThread`); a program that changes
/// its user (a `setpriv --reuid` launcher) clears that, as the kernel does for any such change.
public final class BackgroundProcess: Sendable {
    public let command: [String]
    public let outputPath: String
    public let errorPath: String
    public let pid: Int32
    private let collected = Mutex<Int32?>(nil)

    /// Starts `executable` with `arguments` and `environment` (this process's when nil), stdin
    /// from `standardInput` (/dev/null when nil), stdout appended to `outputPath` and stderr
    /// to `errorPath` (the same file when nil), in `currentDirectory` (this one when nil).
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                standardInput: String? = nil, currentDirectory: String? = nil,
                outputPath: String, errorPath: String? = nil) throws {
        command = [executable] + arguments
        self.outputPath = outputPath
        self.errorPath = errorPath ?? outputPath
        // The shell opens the files in place of its stdin, stdout and stderr, then becomes the program.
        let errors = errorPath == nil ? "2>&1" : "2>>\"$err\""
        let script = "out=$1; err=$2; in=$3; dir=$4; shift 4; cd \"$dir\" || exit 127; exec \"$@\" >>\"$out\" \(errors) <\"$in\""
        let arguments = [
            "-c", script, "sh", outputPath, self.errorPath, standardInput ?? "/dev/null",
            currentDirectory ?? FileManager.default.currentDirectoryPath,
        ] + SpawningThread.dieWithParent + command
        pid = try SpawningThread.shared.run { try ChildProcess.spawn("/bin/sh", arguments: arguments, environment: environment) }
    }

    /// The same with the output in a new file of `scratch` (stderr in another one when
    /// `separateErrors`).
    public convenience init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                            standardInput: String? = nil, currentDirectory: String? = nil,
                            scratch: String, separateErrors: Bool = false) throws {
        let name = scratch + "/process-\(UUID().uuidString)"
        for path in [name + ".out"] + (separateErrors ? [name + ".err"] : []) {
            guard FileManager.default.createFile(atPath: path, contents: nil) else { throw HarnessFailure("cannot create \(path)") }
        }
        try self.init(executable, arguments, environment: environment, standardInput: standardInput, currentDirectory: currentDirectory,
                      outputPath: name + ".out", errorPath: separateErrors ? name + ".err" : nil)
        if let standardInput { try waitForStandardInput(standardInput) }
    }

    /// Waits until the child holds `path` open as its stdin (the shell opens it after the
    /// spawn): a test that starts a reader then expects the file to be in use must not race it.
    /// A child that has already ended is not waited for: a short one (`cat`) may end before a
    /// look finds it reading, under load, and one whose shell could not open the file says so
    /// in its status and output, which its test reads.
    private func waitForStandardInput(_ path: String) throws {
        let wanted = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        try Polling.wait("\(command.joined(separator: " ")) to have \(path) open as its stdin", timeout: .seconds(10),
                         interval: .milliseconds(1)) {
            guard isRunning else { return true }
            return (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/0")) == wanted
        }
    }

    /// Whether it still runs (a stopped process still runs).
    public var isRunning: Bool { collect(blocking: false) == nil }

    /// The status a shell gives: the exit code, or 128 + N for signal N; -1 while it runs.
    public var status: Int32 { collect(blocking: false).map(Self.shellStatus) ?? -1 }

    /// "exit status N", "signal N (SIGKILL)" or "still running".
    public var exitDescription: String {
        guard let raw = collect(blocking: false) else { return "still running" }
        if raw == -1 { return "ended (status collected elsewhere)" }
        let signal = raw & 0x7f
        guard signal != 0 else { return "exit status \((raw >> 8) & 0xff)" }
        let names: [Int32: String] = [SIGSEGV: "SIGSEGV", SIGBUS: "SIGBUS", SIGABRT: "SIGABRT", SIGILL: "SIGILL",
                                      SIGKILL: "SIGKILL", SIGTERM: "SIGTERM", SIGTRAP: "SIGTRAP", SIGINT: "SIGINT"]
        return "signal \(signal)\(names[signal].map { " (\($0))" } ?? "")"
    }

    /// What it wrote to stdout (and to stderr, when they share the file) so far.
    public var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
    /// What it wrote to stderr so far.
    public var errors: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// Sends `signal` if it still runs.
    public func send(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Whether it has exited within `timeout` (polled: the child may be stopped by a signal).
    public func exited(within timeout: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            if ContinuousClock.now >= deadline { return false }
            try await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// The same, blocking this thread.
    public func exitedBlocking(within timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            if ContinuousClock.now >= deadline { return false }
            usleep(1000)
        }
        return true
    }

    /// Waits up to `timeout` for the end; a process that still runs then is killed and the
    /// wait fails.
    public func waitForExit(timeout: Duration = .seconds(20)) async throws {
        guard try await exited(within: timeout) else {
            stop()
            throw HarnessFailure("\(command.joined(separator: " ")) still ran after \(timeout) (killed)")
        }
    }

    /// SIGKILL if it still runs, and waits for it: the cleanup at the end of a test (also
    /// from a defer).
    public func stop() {
        guard isRunning else { return }
        kill(pid, SIGKILL)
        _ = collect(blocking: true)
    }

    /// The raw wait status once it has ended (-1 when another waiter collected it), nil
    /// while it runs.
    private func collect(blocking: Bool) -> Int32? {
        collected.withLock { status in
            if let status { return status }
            var raw: Int32 = 0
            while true {
                let result = waitpid(pid, &raw, blocking ? 0 : WNOHANG)
                if result == pid { status = raw; return raw }
                if result == 0 { return nil }
                if errno == EINTR { continue }
                status = -1  // ECHILD: collected elsewhere; gone, status unknown
                return -1
            }
        }
    }

    private static func shellStatus(_ raw: Int32) -> Int32 {
        if raw == -1 { return -1 }
        let signal = raw & 0x7f
        return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
    }
}
