import Foundation
import Glibc
import NimbusSystem

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
            guard result.status == 0 else { throw SyncFailure(description: "chown -R nobody \(path): \(result.output)") }
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
