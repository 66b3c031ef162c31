import CNimbus
import Glibc
import NimbusVocabulary

/// Programs nimbusctl starts (`lock -- COMMAND`, `xdg-open`), without Foundation's `Process`:
/// a command-line tool that loads all of Foundation spends about 4 ms more starting than one
/// that needs only FoundationEssentials. Failures are `SystemError`s naming the program or pid.
public enum ChildProcess {
    /// Starts `executable` with `arguments`, this process's stdin, stdout and stderr (and no
    /// other descriptor: a connection to the daemon must end with this process), default
    /// signal actions, and `environment` (this process's own when nil). A name without a
    /// slash is looked up in PATH. Returns the child's pid. The corresponding C function is
    /// `posix_spawnp`. `passing` is given to the child as its descriptor 3 (the first of
    /// sd_listen_fds(3)), the one descriptor above stderr it keeps.
    public static func spawn(_ executable: String, arguments: [String], environment: [String: String]? = nil,
                             passing passed: FileDescriptor? = nil) throws -> Int32 {
        let argv = ([executable] + arguments).map { strdup($0) }
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } }
        defer {
            argv.forEach { free($0) }
            envp?.forEach { free($0) }
        }
        return try attributing("start", executable) {
            try (argv + [nil]).withUnsafeBufferPointer { argvBuffer in
                if let envp {
                    return try (envp + [nil]).withUnsafeBufferPointer { envBuffer in
                        try Sys.spawn(executable, argvBuffer.baseAddress!, envBuffer.baseAddress!, passing: passed?.rawValue ?? -1)
                    }
                }
                return try Sys.spawn(executable, argvBuffer.baseAddress!, environ, passing: passed?.rawValue ?? -1)
            }
        }
    }

    /// Waits for the child `pid` to end and returns its status as a shell gives it: its
    /// exit code, or 128 + N when signal N ended it. The corresponding C function is `waitpid`.
    public static func wait(_ pid: Int32) throws -> Int32 {
        let status = try attributing("wait for", "process \(pid)") { try Sys.waitForChild(pid) }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// `wait` for async code: on a thread of its own while the calling task is suspended, so
    /// the cooperative pool (one thread per core) keeps running other tasks meanwhile, such as
    /// the ones serving a connection to the daemon, however long the program runs.
    public static func exitStatus(of pid: Int32) async throws -> Int32 {
        try await ProcessSupport.onThreadOfItsOwn { try wait(pid) }
    }

    /// While a command runs in the foreground, Ctrl-C and Ctrl-\ are for it: the shell sends
    /// them to the whole process group, and this process must outlive the command (to release
    /// its lease after it), as `system(3)` does. The command itself gets default actions.
    /// Runs `body` so. The corresponding C function is `signal`.
    public static func ignoringInterrupts<R>(_ body: () async throws -> R) async rethrows -> R {
        let previous = [SIGINT, SIGQUIT].map { ($0, Glibc.signal($0, SIG_IGN)) }
        defer { for (number, handler) in previous { Glibc.signal(number, handler) } }
        return try await body()
    }
}
