import Foundation

/// One /bin/sh command run to its end, for tests that try what programs see (cat, cp, md5sum
/// on a placeholder; mkfs and mount for a sandbox).
public enum ShellCommand {
    /// Runs `command` with /bin/sh, stdin from /dev/null, and returns its status as a shell
    /// gives it, its stdout and its stderr. Kills it after `timeout`: a reader waiting for an
    /// answer that never comes must not hang the suite. Blocks this thread.
    @discardableResult
    public static func run(_ command: String, timeout: Duration = .seconds(60)) throws -> (status: Int32, output: String, error: String) {
        let scratch = try TemporaryDirectory.make("nimbus-sh")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let process = try BackgroundProcess("/bin/sh", ["-c", command], scratch: scratch, separateErrors: true)
        guard process.exitedBlocking(within: timeout) else {
            process.stop()
            throw HarnessFailure("sh -c \(command) still ran after \(timeout) (killed): \(process.output)\(process.errors)")
        }
        return (process.status, process.output, process.errors)
    }
}
