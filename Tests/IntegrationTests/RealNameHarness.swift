import Foundation
import Glibc
import NimbusSystem
import NimbusTestSupport

// What the real-name placeholder tests (issue 16) need of the machine: root (the daemon's
// pre-content fanotify group needs CAP_SYS_ADMIN), Linux 6.14 or later, and folders on a
// filesystem that accepts pre-content marks (ext4, xfs, btrfs; not tmpfs, which /tmp may be),
// so their sandboxes live under /var/tmp. Tests skip with `skipReason` when any is missing.
// They also run programs as an unprivileged user (nobody) through setpriv(1).

enum RealNameSupport {
    static let base = "/var/tmp"
    /// nobody:nogroup, the unprivileged user of these tests.
    static let nobody: (uid: UInt32, gid: UInt32) = (65534, 65534)

    /// Why these tests cannot run here; nil when they can.
    static let skipReason: String? = probe()

    private static func probe() -> String? {
        guard geteuid() == 0 else { return "skipped: a pre-content fanotify group needs root (CAP_SYS_ADMIN)" }
        let group: FanotifyGroup
        do {
            group = try FanotifyGroup()
        } catch {
            return "skipped: cannot create a pre-content fanotify group (Linux 6.14 or later): \(error)"
        }
        defer { try? group.close() }
        let directory = "\(base)/nimbus-probe-\(getpid())"
        mkdir(directory, 0o700)
        defer { SyncHarness.run(SyncHarness.tool("rm"), ["-rf", directory]) }
        guard FileManager.default.createFile(atPath: directory + "/probe", contents: Data()) else {
            return "skipped: cannot create a file in \(directory)"
        }
        do {
            try group.mark(SystemPath(directory + "/probe"), in: FileDescriptor(rawValue: AT_FDCWD))
        } catch {
            return "skipped: no fanotify pre-content marks on \(base) (Linux 6.14 or later, ext4, xfs or btrfs): \(error)"
        }
        guard FileManager.default.isExecutableFile(atPath: setpriv) else {
            return "skipped: setpriv(1) is missing (util-linux), needed to run programs as another user"
        }
        return nil
    }

    static var setpriv: String { SyncHarness.tool("setpriv") }

    /// Runs what follows as nobody, without any capability, supplementary group or way to gain one.
    static var asNobody: [String] {
        [setpriv, "--reuid=\(nobody.uid)", "--regid=\(nobody.gid)", "--clear-groups", "--inh-caps=-all",
         "--bounding-set=-all", "--no-new-privs"]
    }

    /// Runs nimbusd as nobody with CAP_SYS_ADMIN as its only bounding and ambient capability
    /// and `HOME` of its own: what the packaged unit nimbusd-user@UID.service does.
    static func desktopUnitLauncher(home: String) -> [String] {
        [setpriv, "--reuid=\(nobody.uid)", "--regid=\(nobody.gid)", "--clear-groups", "--inh-caps=+sys_admin",
         "--ambient-caps=+sys_admin", "--bounding-set=-all,+sys_admin", SyncHarness.tool("env"), "HOME=\(home)"]
    }

    /// Gives the sandbox to nobody: its root traversable, `paths` (created) owned by nobody.
    static func handOver(_ sandbox: SyncSandbox, _ paths: [String]) throws {
        chmod(sandbox.root, 0o755)
        for path in paths {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            let result = SyncHarness.run(SyncHarness.tool("chown"), ["-R", "\(nobody.uid):\(nobody.gid)", path])
            guard result.status == 0 else { throw HarnessFailure("chown -R nobody \(path): \(result.output)") }
        }
    }

    /// The fields of /proc/PID/task/TID/status for every thread of `pid`: thread → name → value.
    static func threadStatus(_ pid: Int32) throws -> [String: [String: String]] {
        var result: [String: [String: String]] = [:]
        for task in try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") {
            let text = try String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
            var fields: [String: String] = [:]
            for line in text.split(separator: "\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            result[task] = fields
        }
        return result
    }
}

/// One test's daemon writing real-name placeholders (`[placeholders] style = real-name`) on
/// folders under /var/tmp, or with its local folder on a filesystem image of its own.
enum RealName {

    /// A sandbox whose daemon is set to real-name placeholders and (unless the test sets it)
    /// no limit on fills a minute. With `image`, the local folder is on a new image of that
    /// filesystem (`ext4`, `xfs`, `btrfs`) of `megabytes`.
    static func sandbox(_ label: String, image: String? = nil, megabytes: Int = 1024) throws -> PlaceholderSandbox {
        let s = try PlaceholderSandbox(label, local: image == nil ? "local" : "image/local", base: RealNameSupport.base) { sandbox in
            guard let image else { return }
            if let problem = try sandbox.mountImage("image", filesystem: image, megabytes: megabytes) {
                throw HarnessFailure("[\(label)] \(problem)")
            }
        }
        s.daemon.config = ["placeholders": ["style": "real-name", "open-rate-limit": "1000000"]]
        // A small image has less free than the default min-free-space (1G), which fills, as
        // automatic downloads, keep: what these tests read must fit, and a full disk is the
        // disk's own ENOSPC.
        if image != nil { s.daemon.config["cache"] = ["min-free-space": "0"] }
        return s
    }

    /// Why a local folder on a `filesystem` image cannot be tested here; nil when it can.
    static func imageProblem(_ filesystem: String) -> String? {
        FileManager.default.isExecutableFile(atPath: SyncHarness.tool("mkfs." + filesystem))
            ? nil : "mkfs.\(filesystem) is not installed (apt-get install \(filesystem == "xfs" ? "xfsprogs" : "btrfs-progs"))"
    }

    /// nil when `relative` is a not-downloaded real-name placeholder of the cloud file: its
    /// size, no data blocks, `user.nimbus.state=notDownloaded`, no suffix file beside it.
    /// Looked at with lstat and getxattr only: opening it would fetch it.
    static func isNotDownloaded(_ d: PlaceholderDaemon, _ relative: String) -> String? {
        guard let here = PlaceholderFiles.status(d.local + "/" + relative) else { return "\(relative) is not in the local folder" }
        if PlaceholderFiles.exists(d.local + "/" + relative + ".nimbus") { return "\(relative).nimbus is there (a suffix placeholder)" }
        guard let cloud = PlaceholderFiles.status(d.cloud + "/" + relative) else { return "\(relative) is not in the cloud folder" }
        if here.st_size != cloud.st_size { return "\(relative) has \(here.st_size) bytes, the cloud copy \(cloud.st_size)" }
        if here.st_blocks != 0 { return "\(relative) holds \(here.st_blocks * 512) bytes of data" }
        let state = PlaceholderFiles.xattr(d.local + "/" + relative, "user.nimbus.state")
        return state == "notDownloaded" ? nil : "\(relative): user.nimbus.state is \(state ?? "missing")"
    }

    /// nil when `relative` holds the cloud copy's bytes and says it is downloaded.
    static func isDownloaded(_ d: PlaceholderDaemon, _ relative: String) -> String? {
        let file = d.local + "/" + relative
        guard PlaceholderFiles.exists(file) else { return "\(relative) is not in the local folder" }
        guard PlaceholderFiles.same(file, d.cloud + "/" + relative) else { return "\(relative) differs from the cloud copy" }
        let state = PlaceholderFiles.xattr(file, "user.nimbus.state")
        return state == "downloaded" ? nil : "\(relative): user.nimbus.state is \(state ?? "missing")"
    }

    /// Runs `script` with /bin/sh, `$1`… being `arguments`; stdout and stderr together.
    @discardableResult
    static func shell(_ script: String, _ arguments: [String] = [], as prefix: [String] = []) -> (status: Int32, output: String) {
        let command = prefix + ["/bin/sh", "-c", script, "sh"] + arguments
        return SyncHarness.run(command[0], Array(command.dropFirst()))
    }

    /// `count` bytes of seeded random content.
    static func content(_ count: Int, seed: UInt64) -> [UInt8] {
        var random = SeededRandom(seed: seed)
        return random.bytes(count)
    }
}

/// Counts the opens of one file (inotify `IN_OPEN`): how often the daemon read a cloud copy.
final class OpenCounter {
    private let descriptor: Int32

    init(_ path: String) throws {
        descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0, inotify_add_watch(descriptor, path, UInt32(IN_OPEN)) >= 0 else {
            throw HarnessFailure("inotify on \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(descriptor) }

    /// The opens since the last call.
    func take() -> Int {
        var count = 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard n > 0 else { return count }
            var offset = 0
            while offset + 16 <= n {
                let mask = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self) }
                let length = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self) }
                if mask & UInt32(IN_OPEN) != 0 { count += 1 }
                offset += 16 + Int(length)
            }
        }
    }
}
