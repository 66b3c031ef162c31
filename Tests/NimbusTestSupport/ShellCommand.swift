import Foundation
import Glibc

/// One /bin/sh command run to its end, for tests that try what programs see (cat, cp, md5sum
/// on a placeholder; mkfs and mount for a sandbox).
public enum ShellCommand {
    /// Runs `command` with /bin/sh, stdin from /dev/null, and returns its status as a shell
    /// gives it, its stdout and its stderr. Kills it after `timeout`: a reader waiting for an
    /// answer that never comes must not hang the suite. Blocks this thread.
    @discardableResult
    public static func run(_ command: String, timeout: Duration = .seconds(60)) throws -> (status: Int32, output: String, error: String) {
        try run("/bin/sh", ["-c", command], timeout: timeout)
    }

    /// The same for `executable` with `arguments`, without a shell, in `environment` (this
    /// process's when nil), reading `input` on stdin (/dev/null when nil).
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                           input: [UInt8]? = nil, timeout: Duration = .seconds(60)) throws -> (status: Int32, output: String, error: String) {
        let result = try runForBytes(executable, arguments, environment: environment, input: input, timeout: timeout)
        return (result.status, String(decoding: result.output, as: UTF8.self), result.error)
    }

    /// The same with stdout as the bytes written, for output that need not be UTF-8 (file
    /// names separated by NULs). `input` is given through a file of the scratch folder, not a
    /// pipe: no descriptor of this process reaches the child (`BackgroundProcess`).
    public static func runForBytes(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                                   input: [UInt8]? = nil, timeout: Duration = .seconds(60)) throws -> (status: Int32, output: [UInt8], error: String) {
        let scratch = try TemporaryDirectory.make("nimbus-sh")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let inputPath = scratch + "/input"
        if let input, !FileManager.default.createFile(atPath: inputPath, contents: Data(input)) {
            throw HarnessFailure("cannot write \(inputPath)")
        }
        let process = try BackgroundProcess(executable, arguments, environment: environment, standardInput: input == nil ? nil : inputPath,
                                            scratch: scratch, separateErrors: true)
        guard process.exitedBlocking(within: timeout) else {
            process.stop()
            throw HarnessFailure("\(([executable] + arguments).joined(separator: " ")) still ran after \(timeout) (killed): \(process.output)\(process.errors)")
        }
        let output = try Data(contentsOf: URL(fileURLWithPath: process.outputPath))
        return (process.status, Array(output), process.errors)
    }

    /// Makes an executable script (a stand-in program) at `path`. The file is written by a child
    /// process (`cp`), never opened for writing here: while this process holds a descriptor open
    /// for writing, another test may fork a child that inherits it, and until that child execs
    /// (or for good, without O_CLOEXEC) running the script fails with ETXTBSY, which sh reports
    /// as exit 126 (DolphinMenuTests saw it under load).
    public static func installScript(_ text: String, at path: String) throws {
        let source = path + ".text"
        try text.write(toFile: source, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: source) }
        let copied = try run("/bin/cp", ["--", source, path])
        guard copied.status == 0 else { throw HarnessFailure("cannot install the script \(path): \(copied.output)\(copied.error)") }
        guard chmod(path, 0o755) == 0 else { throw HarnessFailure("chmod 755 \(path): \(String(cString: strerror(errno)))") }
    }
}
