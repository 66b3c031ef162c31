import Glibc
import Testing

/// Which way a change travels in a parametrized test.
enum SyncDirection: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case localToCloud, cloudToLocal

    var testDescription: String { rawValue }
    func source(_ daemon: SyncDaemon) -> String { self == .localToCloud ? daemon.local : daemon.cloud }
    func target(_ daemon: SyncDaemon) -> String { self == .localToCloud ? daemon.cloud : daemon.local }

    /// A sandbox named `label-direction` with one daemon, alpha (not started), and the folders
    /// changes go from and to. Finish the sandbox in a defer.
    func sandbox(_ label: String) throws -> (sandbox: SyncSandbox, daemon: SyncDaemon, source: String, target: String) {
        let sandbox = try SyncSandbox("\(label)-\(self)")
        do {
            let daemon = try sandbox.daemon(device: "alpha")
            return (sandbox, daemon, source(daemon), target(daemon))
        } catch {
            sandbox.finish()
            throw error
        }
    }
}

/// Conditions for `eventually` and `converge`: nil when they hold, else what is wrong.
enum SyncExpect {
    static func file(_ root: String, _ path: String, _ content: String) throws -> String? {
        try file(root, Array(path.utf8), Array(content.utf8))
    }

    static func file(_ root: String, _ path: [UInt8], _ content: [UInt8]) throws -> String? {
        let actual = try SyncFiles.read(SyncFiles.join(root, path))
        if actual == content { return nil }
        let shown = actual.map { $0.count <= 80 ? "\"\(SyncFiles.shown($0))\"" : "\($0.count) bytes" } ?? "nothing"
        return "\(root)/\(SyncFiles.shown(path)) holds \(shown), expected "
            + (content.count <= 80 ? "\"\(SyncFiles.shown(content))\"" : "\(content.count) bytes")
    }

    static func absent(_ root: String, _ path: String) throws -> String? {
        try SyncFiles.status(SyncFiles.join(root, path)) == nil ? nil : "\(root)/\(path) still exists"
    }

    static func directory(_ root: String, _ path: String, mode: mode_t? = nil) throws -> String? {
        guard let s = try SyncFiles.status(SyncFiles.join(root, path)), s.st_mode & S_IFMT == S_IFDIR else {
            return "\(root)/\(path) is not a directory"
        }
        if let mode, s.st_mode & 0o7777 != mode { return "\(root)/\(path) has mode \(String(s.st_mode & 0o7777, radix: 8)), expected \(String(mode, radix: 8))" }
        return nil
    }

    static func mode(_ root: String, _ path: String, _ mode: mode_t) throws -> String? {
        guard let s = try SyncFiles.status(SyncFiles.join(root, path)) else { return "\(root)/\(path) is missing" }
        return s.st_mode & 0o7777 == mode ? nil : "\(root)/\(path) has mode \(String(s.st_mode & 0o7777, radix: 8)), expected \(String(mode, radix: 8))"
    }

    static func symlink(_ root: String, _ path: String, to target: String) throws -> String? {
        guard let s = try SyncFiles.status(SyncFiles.join(root, path)) else { return "\(root)/\(path) is missing" }
        guard s.st_mode & S_IFMT == S_IFLNK else { return "\(root)/\(path) is not a symlink (mode \(String(s.st_mode, radix: 8)))" }
        let actual = try SyncFiles.readSymlink(SyncFiles.join(root, path))
        return actual == Array(target.utf8) ? nil : "\(root)/\(path) points to \(SyncFiles.shown(actual)), expected \(target)"
    }

    static func all(_ checks: String?...) -> String? {
        let failing = checks.compactMap { $0 }
        return failing.isEmpty ? nil : failing.joined(separator: "; ")
    }
}
