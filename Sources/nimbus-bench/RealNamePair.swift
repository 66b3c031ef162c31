import Foundation
import Glibc
import NimbusSystem

/// A running `nimbusd --mode on-demand` on fresh folders that writes real-name placeholders,
/// with no limit on fills a minute (the bench opens hundreds of files in a few seconds).
/// Throws when the daemon writes suffix placeholders instead, with the daemon's reason.
struct RealNamePair {
    let local: String
    let cloud: String
    let socket: String
    let daemon: Daemon

    init(workspace: Workspace, label: String) throws {
        let config = workspace.fresh(label + ".conf")
        try "[placeholders]\nopen-rate-limit = 1000000\n".write(toFile: config, atomically: true, encoding: .utf8)
        let pair = try OnDemandPair(workspace: workspace, label: label, arguments: ["--mode", "on-demand", "--config", config])
        (local, cloud, socket, daemon) = (pair.local, pair.cloud, pair.socket, pair.daemon)
        let style = Self.style(socket: socket)
        guard style.style == "real-name" else {
            _ = daemon.stop()
            throw BenchError("the daemon writes \(style.style) placeholders: \(style.reason) "
                             + "(real-name ones need root, Linux 6.14 or later and --dir on ext4, xfs or btrfs)")
        }
    }

    /// `placeholderStyle` and `placeholderStyleReason` of `nimbusctl --json status`.
    static func style(socket: String) -> (style: String, reason: String) {
        let result = Shell.run(ctlPath, ["--socket", socket, "--json", "status"])
        guard let object = (try? JSONSerialization.jsonObject(with: Data(result.output.utf8))) as? [String: Any] else {
            return ("unknown", "nimbusctl status said: \(result.output.prefix(300))")
        }
        return (object["placeholderStyle"] as? String ?? "unknown", object["placeholderStyleReason"] as? String ?? "")
    }

    static var ctlPath: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("nimbusctl").path
    }

    /// Whether `path` is a real-name placeholder of `size` bytes: looked at with lstat and
    /// getxattr only, since opening it would fetch it.
    static func isPlaceholder(_ path: String, size: Int64) -> Bool {
        var status = stat()
        guard lstat(path, &status) == 0, Int64(status.st_size) == size, status.st_blocks == 0 else { return false }
        let slash = path.lastIndex(of: "/")!
        guard let folder = try? FileDescriptor.open(SystemPath(String(path[..<slash])), .directory) else { return false }
        let value = folder.closeAfter {
            try? folder.extendedAttribute("user.nimbus.state", of: SystemPath(String(path[path.index(after: slash)...])))
        }
        return value == Array("notDownloaded".utf8)
    }

    /// The real-name placeholders of `size` bytes below `root`.
    static func countPlaceholders(in root: String, size: Int64) throws -> Int {
        guard let walker = FileManager.default.enumerator(atPath: root) else { throw BenchError("cannot list \(root)") }
        var count = 0
        while let relative = walker.nextObject() as? String {
            if isPlaceholder(root + "/" + relative, size: size) { count += 1 }
        }
        return count
    }

    func waitForPlaceholders(_ files: [String], size: Int64, timeout: Double = 120) throws {
        let deadline = Monotonic.deadline(after: timeout)
        var missing = files
        while true {
            missing = missing.filter { !Self.isPlaceholder(local + "/" + $0, size: size) }
            if missing.isEmpty { return }
            guard !Monotonic.hasPassed(deadline) else {
                throw BenchError("\(missing.count) real-name placeholders (\(missing.first!) …) did not appear within \(Int(timeout)) s")
            }
            Monotonic.sleep(seconds: 0.01)
        }
    }

    /// The file's state as `nimbusctl info` reports it.
    func state(of file: String) throws -> String {
        let result = try Shell.check(Self.ctlPath, ["--socket", socket, "--json", "info", file])
        let object = (try? JSONSerialization.jsonObject(with: Data(result.output.utf8))) as? [String: Any]
        return object?["state"] as? String ?? "unknown"
    }

    /// Makes `file` not downloaded again (in place), and checks that it is.
    func evict(_ file: String) throws {
        let size = try FileDescriptor(rawValue: AT_FDCWD).metadata(of: SystemPath(local + "/" + file)).size
        try Shell.check(Self.ctlPath, ["--socket", socket, "evict", file], discardOutput: true)
        try waitForPlaceholders([file], size: size, timeout: 30)
    }

    func stop() { _ = daemon.stop() }
}
