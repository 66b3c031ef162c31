import Foundation
import Glibc
import NimbusTestSupport
import Testing

// The harness of the sync integration tests: temporary folders, the real `nimbusd` started and
// stopped as a child process, and polls with deadlines. Every wait is a condition polled until
// a deadline, never a sleep standing in for synchronisation. Names are prefixed with `Sync` so
// that they never collide with the other harnesses of this test target.

enum SyncHarness {
    /// The directory of the test bundle; `nimbusd` and `nimbusctl` are built next to it.
    static let binaryDirectory = URL(fileURLWithPath: NimbusdProcess.binaryDirectory)
    static var nimbusd: String { NimbusdProcess.nimbusd }
    static var nimbusctl: String { NimbusdProcess.nimbusctl }

    /// Runs a program to completion (`ShellCommand`: no descriptor of the test process leaks
    /// into it, killed after ten minutes); returns its exit status and its stdout, then its stderr.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) -> (status: Int32, output: String) {
        do {
            let result = try ShellCommand.run(executable, arguments, timeout: .seconds(600))
            return (result.status, result.output + result.error)
        } catch {
            return (-1, "cannot run \(executable): \(error)")
        }
    }

    /// The path of a system tool (`mount`, `cp`…), wherever this distribution keeps it.
    static func tool(_ name: String) -> String {
        ["/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/"].map { $0 + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
            ?? "/usr/bin/" + name
    }

    /// Mounts a tmpfs of `size` (e.g. "8m") on `directory`; nil on success, else why not.
    static func mountTmpfs(_ directory: String, size: String) -> String? {
        let result = run(SyncHarness.tool("mount"), ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", directory])
        guard result.status == 0 else {
            return "cannot mount a tmpfs on \(directory) (uid \(getuid()); these tests need root or CAP_SYS_ADMIN): "
                + "mount exited \(result.status): \(result.output)"
        }
        return nil
    }

    static func unmount(_ directory: String, lazy: Bool = true) -> (status: Int32, output: String) {
        run(SyncHarness.tool("umount"), (lazy ? ["-l"] : []) + [directory])
    }
}

/// A temporary directory holding one test's folders, daemons and logs. Call `finish()` in a
/// defer: it kills daemons still running, unmounts what was mounted and removes everything.
final class SyncSandbox {
    let root: String
    let label: String
    private(set) var daemons: [SyncDaemon] = []
    private(set) var mounts: [String] = []

    /// `base` is /tmp unless the test needs a filesystem that /tmp may not be (fanotify marks:
    /// /var/tmp, see `RealNameSupport`).
    init(_ label: String, base: String = "/tmp") throws {
        root = try TemporaryDirectory.make("nimbus-it", in: base)
        self.label = label
    }

    /// `root/name`, created (with its parents) if missing.
    @discardableResult
    func folder(_ name: String) throws -> String {
        let path = root + "/" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A daemon for `local` and `cloud` (folders of this sandbox, created) with its own state.
    func daemon(device: String, local: String = "local", cloud: String = "cloud") throws -> SyncDaemon {
        // Its files are named after the device, unless the name is too long for a socket's path.
        let tag = device.utf8.count <= 16 ? device : "device\(daemons.count + 1)"
        let daemon = SyncDaemon(device: device, tag: tag, local: try folder(local), cloud: try folder(cloud),
                                stateDirectory: root + "/state-" + tag, home: root)
        daemons.append(daemon)
        return daemon
    }

    /// Mounts a tmpfs on `root/name`; nil on success, else why not (record it as an issue).
    func mountTmpfs(_ name: String, size: String) throws -> String? {
        let path = try folder(name)
        if let problem = SyncHarness.mountTmpfs(path, size: size) { return problem }
        mounts.append(path)
        return nil
    }

    /// Mounts a new `filesystem` image of `megabytes` (a sparse file of this sandbox) on
    /// `root/name` through a loop device; nil on success, else why not (no mkfs, no root).
    func mountImage(_ name: String, filesystem: String, megabytes: Int) throws -> String? {
        let mkfs = SyncHarness.tool("mkfs." + filesystem)
        guard FileManager.default.isExecutableFile(atPath: mkfs) else { return "mkfs.\(filesystem) is not installed" }
        let image = root + "/" + name + ".img"
        guard FileManager.default.createFile(atPath: image, contents: nil), truncate(image, off_t(megabytes) << 20) == 0 else {
            return "cannot make the image file \(image)"
        }
        let made = SyncHarness.run(mkfs, (filesystem == "ext4" ? ["-q", "-F"] : ["-q", "-f"]) + [image])
        guard made.status == 0 else { return "mkfs.\(filesystem) \(image) exited \(made.status): \(made.output)" }
        let path = try folder(name)
        let mounted = SyncHarness.run(SyncHarness.tool("mount"), ["-o", "loop", image, path])
        guard mounted.status == 0 else { return "cannot mount \(image) (needs root and loop devices): \(mounted.output)" }
        mounts.append(path)
        return nil
    }

    /// Kills the daemons still running, unmounts, removes the sandbox.
    func finish() {
        for daemon in daemons { daemon.killIfRunning() }
        for mount in mounts.reversed() { _ = SyncHarness.unmount(mount) }
        if TemporaryDirectory.keep {
            print("[\(label)] kept \(root)")
        } else {
            SyncHarness.run(SyncHarness.tool("rm"), ["-rf", root])
        }
    }

    /// The end of every daemon's log, for failure messages.
    func logs(lines: Int = 60) -> String {
        daemons.map { daemon in
            daemon.logTail(lines: lines) + (daemon.isRunning ? "\n" + daemon.threadStates() : "")
        }.joined(separator: "\n")
    }

    /// A failure with the end of every daemon's log, naming where the whole logs are kept.
    func failure(_ message: String) -> HarnessFailure {
        HarnessFailure("[\(label)] \(message)\n\(logs())\n\(keepLogs())")
    }

    /// Copies the logs of this sandbox (the daemons', the servers' and FUSE clients' of
    /// `NetworkCloudServers`) where `finish()` does not remove them; returns a line saying where.
    /// Only the sandbox's top folder and `sshd` are listed: a folder below may be a network mount.
    func keepLogs() -> String {
        let logs = ["", "/sshd"].flatMap { folder -> [String] in
            let names = (try? FileManager.default.contentsOfDirectory(atPath: root + folder)) ?? []
            return names.filter { $0.hasSuffix(".log") }.map { root + folder + "/" + $0 }
        }
        return TemporaryDirectory.keepCopies(of: logs.sorted(), label: label)
    }

    /// Polls `check` every `interval` until it returns nil (satisfied) or the deadline passes;
    /// `check` returns what is still missing, which the failure reports.
    func eventually(_ what: String, timeout: Duration = .seconds(10), interval: Duration = .milliseconds(10),
                    _ check: () throws -> String?) async throws {
        do {
            try await Polling.eventually(what, timeout: timeout, interval: interval, check)
        } catch let timedOut as HarnessFailure {
            throw failure(timedOut.description)
        }
    }

    /// Waits until both trees are equal (ignoring Nimbus's own markers) and `check` holds too.
    func converge(_ what: String, _ a: String, _ b: String, timeout: Duration = .seconds(10),
                  contentLimit: Int = 4 << 20, _ check: () throws -> String? = { nil }) async throws {
        try await eventually("\(what) (and \(a) equal to \(b))", timeout: timeout) {
            if let missing = try check() { return missing }
            let left = try SyncTree(scanning: a, contentLimit: contentLimit)
            let right = try SyncTree(scanning: b, contentLimit: contentLimit)
            return left.differences(from: right, names: (a, b))
        }
    }
}
