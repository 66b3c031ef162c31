import Foundation
import Glibc
import NimbusSystem
import Testing
import NimbusTestSupport

// Network filesystems on loopback for the shared-cloud tests (DESIGN §3): a throwaway sshd
// bound to 127.0.0.1 (its own host key, authorized key and port) mounted with sshfs, and an
// rclone WebDAV server mounted with `rclone mount`. Each device mounts the server on its own
// mount point, as separate machines would, so each has its own client cache. `.ci/run`
// installs openssh-server, sshfs, rclone and fuse3; without them, or without root, the tests
// skip and say why.

enum NetworkCloud {
    /// The rclone mount options the README recommends for a shared cloud folder: no VFS write
    /// cache (a file is on the server when `close` returns, and a rename is a rename on the
    /// server; with `--vfs-cache-mode writes` rclone 1.60 uploads after the close, and a rename
    /// made during that upload leaves the file on the server under its old, temporary name),
    /// and no directory or attribute cache (names are claimed with `O_EXCL`, which rclone checks
    /// only against what it knows of the folder).
    static let recommendedRcloneOptions = ["--vfs-cache-mode", "off", "--dir-cache-time", "0s", "--attr-timeout", "0s"]

    /// Why the sshfs tests cannot run here, or nil.
    static var sshfsUnavailable: String? { unavailable(["sshfs", "sshd", "ssh-keygen", "fusermount3"]) }
    /// Why the rclone tests cannot run here, or nil.
    static var rcloneUnavailable: String? { unavailable(["rclone", "fusermount3"]) }

    static func unavailable(_ tools: [String]) -> String? {
        guard geteuid() == 0 else { return "skipped: mounting network filesystems on loopback needs root" }
        guard access("/dev/fuse", R_OK | W_OK) == 0 else { return "skipped: /dev/fuse is missing (no FUSE in this kernel or container)" }
        let missing = tools.filter { !FileManager.default.isExecutableFile(atPath: SyncHarness.tool($0)) }
        guard missing.isEmpty else {
            return "skipped: \(missing.joined(separator: ", ")) not installed (apt-get install openssh-server sshfs rclone fuse3; .ci/run does)"
        }
        return nil
    }

    /// A TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessFailure("socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw HarnessFailure("bind 127.0.0.1:0: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts connections on 127.0.0.1:`port`.
    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// Whether `path` is a mount point now (listed in /proc/self/mountinfo).
    static func isMounted(_ path: String) -> Bool {
        let info = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        return info.split(separator: "\n").contains { $0.split(separator: " ").dropFirst(4).first.map(String.init) == path }
    }
}

/// The servers and mounts of one test, torn down by `stop()` (in a defer, before the sandbox's
/// `finish()`, which would otherwise remove files through a live mount).
final class NetworkCloudServers {
    let sandbox: SyncSandbox
    /// Server and FUSE client processes, detached (see `spawnDetached`).
    private var servers: [pid_t] = []
    private var mounts: [String] = []
    private var sshPort: Int?
    private var webdavPort: Int?

    init(_ sandbox: SyncSandbox) { self.sandbox = sandbox }

    /// Starts `sshd -D` on a free port of 127.0.0.1, with a host key and an authorized user key
    /// made for this test; returns when it accepts connections.
    func startSSH() async throws {
        let directory = try sandbox.folder("sshd")
        for key in ["host", "user"] {
            let made = SyncHarness.run(SyncHarness.tool("ssh-keygen"), ["-q", "-t", "ed25519", "-N", "", "-f", "\(directory)/\(key)"])
            guard made.status == 0 else { throw sandbox.failure("ssh-keygen failed: \(made.output)") }
        }
        try FileManager.default.copyItem(atPath: "\(directory)/user.pub", toPath: "\(directory)/authorized_keys")
        let port = try NetworkCloud.freePort()
        let config = """
            ListenAddress 127.0.0.1
            Port \(port)
            HostKey \(directory)/host
            AuthorizedKeysFile \(directory)/authorized_keys
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            PermitRootLogin prohibit-password
            StrictModes no
            UsePAM no
            PidFile none
            Subsystem sftp internal-sftp

            """
        try config.write(toFile: "\(directory)/sshd_config", atomically: true, encoding: .utf8)
        // sshd insists on its privilege-separation directory.
        try? FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        try await startServer(SyncHarness.tool("sshd"), ["-D", "-e", "-f", "\(directory)/sshd_config"],
                              log: "\(directory)/sshd.log", port: port)
        sshPort = port
    }

    /// `sshfs` of the server's `remote` folder on `mountPoint` (created), with `options`
    /// (`cache=no`, …) besides the key and host checks.
    func mountSSHFS(_ remote: String, at mountPoint: String, options: [String] = []) async throws {
        let directory = sandbox.root + "/sshd"
        guard let sshPort else { throw sandbox.failure("startSSH() first") }
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let all = ["IdentityFile=\(directory)/user", "StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null",
                   "BatchMode=yes", "LogLevel=ERROR"] + options
        // In the foreground (-f), as a child of the test: a daemonized sshfs would keep the
        // descriptors Foundation watches to notice that its child exited.
        try await startMount(SyncHarness.tool("sshfs"), ["-f", "-p", "\(sshPort)", "-o", all.joined(separator: ","),
                                                         "root@127.0.0.1:\(remote)", mountPoint], at: mountPoint)

    }

    /// `rclone serve webdav` of `served` on a free port of 127.0.0.1.
    func startWebDAV(serving served: String) async throws {
        let port = try NetworkCloud.freePort()
        try await startServer(SyncHarness.tool("rclone"), ["serve", "webdav", served, "--addr", "127.0.0.1:\(port)",
                                                           "--config", "/dev/null"],
                              log: sandbox.root + "/webdav.log", port: port)
        webdavPort = port
    }

    /// `rclone mount` of the WebDAV server on `mountPoint` with its VFS cache in a folder of its
    /// own, and `options`; returns once mounted. `NIMBUS_IT_RCLONE_ARGS` adds arguments to every
    /// mount, `{n}` standing for the mount's number, to look into a stall or a lost version:
    /// `-vv --log-format date,time,microseconds` times each FUSE operation in `mount-N.log`
    /// (kept on failure), and `--rc --rc-addr 127.0.0.1:557{n} --rc-no-auth` serves rclone's
    /// goroutines at `/debug/pprof/goroutine?debug=2` while the test runs.
    func mountRclone(at mountPoint: String, options: [String]) async throws {
        guard let webdavPort else { throw sandbox.failure("startWebDAV() first") }
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let cache = try sandbox.folder("rclone-cache-\(mounts.count)")
        let extra = (ProcessInfo.processInfo.environment["NIMBUS_IT_RCLONE_ARGS"] ?? "")
            .replacingOccurrences(of: "{n}", with: "\(mounts.count)").split(separator: " ").map(String.init)
        try await startMount(SyncHarness.tool("rclone"),
                             ["mount", ":webdav:", mountPoint, "--webdav-url", "http://127.0.0.1:\(webdavPort)",
                              "--config", "/dev/null", "--cache-dir", cache] + options + extra, at: mountPoint)
    }

    /// Runs a FUSE client in the foreground and waits until `mountPoint` is mounted.
    private func startMount(_ tool: String, _ arguments: [String], at mountPoint: String) async throws {
        let log = sandbox.root + "/mount-\(mounts.count).log"
        let pid = try spawnDetached(tool, arguments, log: log)
        mounts.append(mountPoint)
        try await sandbox.eventually("\((tool as NSString).lastPathComponent) mounted on \(mountPoint)", timeout: .seconds(20)) {
            guard kill(pid, 0) == 0 else { return "it exited: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")" }
            return NetworkCloud.isMounted(mountPoint) ? nil : "not mounted yet"
        }
    }

    private func startServer(_ tool: String, _ arguments: [String], log: String, port: Int) async throws {
        let pid = try spawnDetached(tool, arguments, log: log)
        try await sandbox.eventually("\(tool) listening on 127.0.0.1:\(port)", timeout: .seconds(20)) {
            guard kill(pid, 0) == 0 else { return "\(tool) exited: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")" }
            return NetworkCloud.accepts(port) ? nil : "not listening yet"
        }
    }

    /// Starts a long-running program through `sh -c '… &'`, output to `log`; returns its pid.
    /// It is not this process's child: Foundation's `Process` reaps its children in one
    /// monitor, which was seen to block in `wait4` on a running sshd and then never noticed
    /// that a short command (nimbusctl) had exited.
    private func spawnDetached(_ tool: String, _ arguments: [String], log: String) throws -> pid_t {
        let command = ([tool] + arguments).map(Self.quoted).joined(separator: " ")
        let pidFile = log + ".pid"
        // Not through Foundation's `Process` either: after the first detached program, its
        // monitor stopped noticing that the shell had exited (a zombie, waited for forever).
        let script = "\(command) </dev/null >\(Self.quoted(log)) 2>&1 & echo $! >\(Self.quoted(pidFile))"
        let status = Self.runShell(script)
        let text = (try? String(contentsOfFile: pidFile, encoding: .utf8)) ?? ""
        guard status == 0, let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw sandbox.failure("cannot start \(command) (sh exited \(status)): \(text)")
        }
        servers.append(pid)
        return pid
    }

    /// `sh -c script` and its exit status as a shell gives it (-1 if it could not run), through
    /// `ChildProcess`, which passes no descriptor above stderr: a long-running server started
    /// from here would otherwise keep the write end of another test's pipe (a nimbusctl's
    /// output that Foundation's `Process` reads to its end), and that test would wait for the
    /// server to stop.
    static func runShell(_ script: String) -> Int32 {
        guard let pid = try? ChildProcess.spawn(SyncHarness.tool("sh"), arguments: ["-c", script]) else { return -1 }
        return (try? ChildProcess.wait(pid)) ?? -1
    }

    static func quoted(_ word: String) -> String { "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// Unmounts (lazily: a daemon may still hold a descriptor) and stops the servers.
    func stop() {
        for mount in mounts.reversed() {
            _ = SyncHarness.run(SyncHarness.tool("fusermount3"), ["-u", "-z", mount])
        }
        for pid in servers.reversed() {
            kill(pid, SIGTERM)
            if !Polling.spin(timeout: .seconds(5), interval: .milliseconds(10), until: { kill(pid, 0) != 0 }) { kill(pid, SIGKILL) }
        }
        mounts = []
        servers = []
    }
}
