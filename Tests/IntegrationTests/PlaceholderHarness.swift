import Foundation
import Glibc
import NimbusTestSupport
import Testing

// The harness of the placeholder integration tests (issue #5): a real `nimbusd` started with a
// mode and a config file of the test's choosing, `nimbusctl` run with its stdout, stderr and
// exit status kept apart, xattrs, big files compared with cmp(1), and counts of copies taken
// from the daemon's log. It reuses SyncSandbox (folders, tmpfs), NimbusdProcess (the daemon)
// and CtlHarness (running nimbusctl off the cooperative threads). Names start with
// `Placeholder` so that they never collide with the other harnesses of this test target.

/// One `nimbusd` on `local` and `cloud` of a sandbox, restartable, with its settings in a
/// config file written at every launch: change `mode` or `config` between a stop and a start.
/// Starting, READY=1, stopping and the log are NimbusdProcess's.
final class PlaceholderDaemon: NimbusdProcess {
    let sandbox: SyncSandbox
    let configPath: String
    /// `--mode`.
    var mode = "on-demand"
    /// The config file: section → key → value (sections `placeholders`, `cache`, …).
    var config: [String: [String: String]] = [:]
    /// `[placeholders] style`, unless `config` sets it: these tests were written for the suffix
    /// style, which runs everywhere; the real-name tests set `real-name` (or nil for `auto`).
    var style: String? = "suffix"

    init(_ sandbox: SyncSandbox, local: String = "local", cloud: String = "cloud") throws {
        self.sandbox = sandbox
        configPath = sandbox.root + "/nimbus.conf"
        super.init(name: "nimbusd", local: try sandbox.folder(local), cloud: try sandbox.folder(cloud),
                   stateDirectory: try sandbox.folder("state"), socketPath: sandbox.root + "/ctl.sock",
                   logPath: sandbox.root + "/nimbusd.log", notifyPath: sandbox.root + "/notify.sock")
        logWaitTimeout = .seconds(10)
    }

    var arguments: [String] {
        pairArguments + ["--device-name", "alpha", "--log-level", "debug", "--mode", mode, "--config", configPath]
    }

    /// The environment of both programs: a home of the sandbox, no systemd.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = sandbox.root
        environment["XDG_CONFIG_HOME"] = sandbox.root + "/config"
        environment["XDG_RUNTIME_DIR"] = sandbox.root
        environment["JOURNAL_STREAM"] = nil
        environment["WATCHDOG_USEC"] = nil
        environment["NOTIFY_SOCKET"] = nil
        // No notifications on the tester's desktop; a test may give a private bus.
        environment["DBUS_SESSION_BUS_ADDRESS"] = sessionBusAddress
        return environment
    }

    /// The session bus the daemon notifies on (`DBUS_SESSION_BUS_ADDRESS`); nil: none.
    var sessionBusAddress: String?

    func writeConfig() throws {
        var text = "# written by the placeholder integration tests\n"
        var config = self.config
        if let style, config["placeholders"]?["style"] == nil { config["placeholders", default: [:]]["style"] = style }
        for (section, keys) in config.sorted(by: { $0.key < $1.key }) {
            text += "[\(section)]\n" + keys.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)\n" }.joined()
        }
        try text.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    /// Starts the daemon and waits for `READY=1`.
    func start(timeout: Duration = NimbusdProcess.readyDeadline) async throws {
        guard !isRunning else { throw failure("already running") }
        try writeConfig()
        let settings = (try? String(contentsOfFile: configPath, encoding: .utf8)) ?? ""
        try launch(arguments: arguments, environment: environment, note: "=== config:\n\(settings)")
        try await waitUntilReady(timeout: timeout)
    }

    /// SIGTERM; expects a clean exit 0 within `timeout` (recorded as an issue otherwise).
    func stop(timeout: Duration = .seconds(10), sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await stopExpectingCleanExit(timeout: timeout, sourceLocation: sourceLocation)
    }

    /// The copies of `path` started (after `mark`): the daemon logs `downloading PATH (N bytes)`
    /// at info level once per copy.
    func downloadsStarted(_ path: String, since mark: Int = 0) -> Int {
        logLines(containing: "downloading \(path) (", since: mark).count
    }

    /// Every copy started from the cloud to the local folder (after `mark`).
    func allDownloadsStarted(since mark: Int = 0) -> [String] {
        logLines(containing: " bytes)", since: mark).filter { $0.contains("downloading ") && !$0.contains("was opened") }
    }

    override func failure(_ message: String) -> HarnessFailure {
        HarnessFailure("[\(sandbox.label)] \(message)\n\(logTail())")
    }

    func ctl(_ arguments: [String], environment extra: [String: String] = [:]) async throws -> CtlResult {
        let arguments = ["--socket", socketPath] + arguments
        let environment = environment.merging(extra) { $1 }
        let scratch = sandbox.root
        return try await Polling.blocking {
            try CtlHarness.run(SyncHarness.nimbusctl, arguments, environment: environment, currentDirectory: scratch, scratch: scratch)
        }
    }

    /// `nimbusctl --json arguments…`, expected to succeed; its JSON result.
    @discardableResult
    func ctlJSON(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any] {
        let result = try await ctl(["--json"] + arguments)
        guard result.status == 0 else { throw failure("nimbusctl \(arguments.joined(separator: " ")) failed: \(result)") }
        return try result.json()
    }

    /// `nimbusctl --json arguments…`, expected to fail with exit status 1; the error object.
    func ctlError(_ arguments: [String]) async throws -> (error: [String: Any], result: CtlResult) {
        let result = try await ctl(["--json"] + arguments)
        guard result.status == 1, let error = (try? result.json())?["error"] as? [String: Any] else {
            throw failure("nimbusctl \(arguments.joined(separator: " ")) should have failed with a JSON error and exit status 1: \(result)")
        }
        return (error, result)
    }

    /// `nimbusctl --json ls -r` as path → entry.
    func entries() async throws -> [String: [String: Any]] {
        let list = try await ctlJSON(["ls", "-r"])
        let entries = list["entries"] as? [[String: Any]] ?? []
        return Dictionary(entries.map { ($0["path"] as? String ?? "?", $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// Waits until the daemon has handled every local event so far: a new file written in the
    /// local folder after them reaches the cloud (inotify reports events in order, and the
    /// daemon handles them in order).
    func settle(_ name: String = "settle") async throws {
        let file = ".marker-\(name)-\(UUID().uuidString.prefix(8)).txt"
        try PlaceholderFiles.write(local + "/" + file, Array("marker\n".utf8))
        try await eventually("the marker \(file) to reach the cloud (the daemon handled the events before it)") {
            try SyncExpect.file(cloud, file, "marker\n")
        }
    }
}

/// A sandbox with one daemon, both cleaned up by `finish()` (call it in a defer).
final class PlaceholderSandbox {
    let sandbox: SyncSandbox
    let daemon: PlaceholderDaemon

    /// `prepare` runs on the sandbox before the daemon's folders are made (to mount a
    /// filesystem image where the local folder goes, say).
    init(_ label: String, local: String = "local", base: String = "/tmp",
         prepare: (SyncSandbox) throws -> Void = { _ in }) throws {
        sandbox = try SyncSandbox(label, base: base)
        do {
            try prepare(sandbox)
            daemon = try PlaceholderDaemon(sandbox, local: local)
        } catch {
            sandbox.finish()
            throw error
        }
    }

    var root: String { sandbox.root }

    /// A sandbox whose daemon downloads only when asked (`hydrate-on-open = false`), with
    /// `cloud` (name → text) written in its cloud folder. Not started.
    static func downloadingOnRequest(_ label: String, cloud: KeyValuePairs<String, String> = [:]) throws -> PlaceholderSandbox {
        let sandbox = try PlaceholderSandbox(label)
        sandbox.daemon.config = ["placeholders": ["hydrate-on-open": "false"]]
        do {
            for (name, text) in cloud { try PlaceholderFiles.write(sandbox.daemon.cloud + "/" + name, Array(text.utf8)) }
        } catch {
            sandbox.finish()
            throw error
        }
        return sandbox
    }

    func finish() {
        daemon.killIfRunning()
        sandbox.finish()
    }
}

enum PlaceholderFiles {
    static let firstLine = "# Nimbus placeholder: this file stands for a file kept in the cloud."

    static func write(_ path: String, _ bytes: [UInt8]) throws {
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try SyncFiles.write(Array(path.utf8), bytes)
    }

    static func read(_ path: String) throws -> [UInt8]? { try SyncFiles.read(Array(path.utf8)) }
    static func text(_ path: String) -> String? { (try? SyncFiles.text(Array(path.utf8))) ?? nil }
    static func exists(_ path: String) -> Bool { SyncFiles.exists(Array(path.utf8)) }
    static func status(_ path: String) -> stat? { (try? SyncFiles.status(Array(path.utf8))) ?? nil }

    static func mtime(_ path: String) -> Int64? {
        status(path).map { Int64($0.st_mtim.tv_sec) * 1_000_000_000 + Int64($0.st_mtim.tv_nsec) }
    }

    /// Sets the modification time of `path` (nanoseconds since the epoch).
    static func setMtime(_ path: String, _ nanoseconds: Int64) throws {
        let t = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        let times = [t, t]
        guard utimensat(AT_FDCWD, path, times, 0) == 0 else {
            throw HarnessFailure("utimensat \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// The value of the extended attribute `name` of `path`; nil when it has none.
    static func xattr(_ path: String, _ name: String) -> String? {
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBytes { lgetxattrFunction(path, name, $0.baseAddress, $0.count) }
        return n < 0 ? nil : String(decoding: buffer[..<n], as: UTF8.self)
    }

    /// glibc's `lgetxattr`, which Swift's Glibc module leaves out (sys/xattr.h); looked up at
    /// run time so that the tests need nothing of the daemon's C shim.
    typealias GetXattr = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int
    nonisolated(unsafe) static let lgetxattrFunction: GetXattr = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "lgetxattr") else { fatalError("no lgetxattr in libc") }
        return unsafeBitCast(symbol, to: GetXattr.self)
    }()

    /// open(2) and close: what a program opening the file does (the daemon sees IN_OPEN).
    @discardableResult
    static func touchByOpening(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    /// `megabytes` MiB of random-looking bytes, written 1 MiB at a time (every MiB different).
    static func writeBig(_ path: String, megabytes: Int, seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        var block = random.bytes(1 << 20)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw HarnessFailure("open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        for index in 0..<megabytes {
            withUnsafeBytes(of: UInt64(index) &* 0x9E37_79B9_7F4A_7C15 ^ seed) { word in
                for i in 0..<8 { block[i] = word[i] }
            }
            try SyncFiles.writeAll(fd, block, Array(path.utf8))
        }
    }

    /// Whether both files hold the same bytes (cmp(1), quick on big files).
    static func same(_ a: String, _ b: String) -> Bool {
        SyncHarness.run(SyncHarness.tool("cmp"), ["-s", a, b]).status == 0
    }

    /// The `.nimbus-tmp-*` files below `root` (relative paths).
    static func temporaryFiles(_ root: String) -> [String] { (try? SyncFiles.temporaryFiles(in: root)) ?? ["(cannot scan \(root))"] }

    /// The placeholder text as key → value, with its first line and its section header.
    static func parse(_ text: String) -> (firstLine: String, section: String, values: [String: String]) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var values: [String: String] = [:]
        for line in lines.dropFirst(2) {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            values[key] = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        }
        return (lines.first ?? "", lines.count > 1 ? lines[1] : "", values)
    }

    /// `2024-01-02T03:04:05.25Z` (or with an offset) as nanoseconds since the epoch.
    static func parseRFC3339(_ text: String) -> Int64? {
        let scalars = Array(text.utf8)
        guard scalars.count >= 20 else { return nil }
        let main = String(decoding: scalars[0..<19], as: UTF8.self)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        guard let date = formatter.date(from: main) else { return nil }
        var rest = String(decoding: scalars[19...], as: UTF8.self)
        var nanoseconds: Int64 = 0
        if rest.hasPrefix(".") {
            let digits = rest.dropFirst().prefix { $0.isNumber }
            guard !digits.isEmpty, digits.count <= 9 else { return nil }
            nanoseconds = Int64(digits + String(repeating: "0", count: 9 - digits.count))!
            rest = String(rest.dropFirst(1 + digits.count))
        }
        var offset: Int64 = 0
        if rest != "Z" && rest != "z" {
            let parts = rest.dropFirst().split(separator: ":")
            guard let sign = rest.first, sign == "+" || sign == "-", parts.count == 2,
                  let hours = Int64(parts[0]), let minutes = Int64(parts[1]) else { return nil }
            offset = (hours * 3600 + minutes * 60) * (sign == "-" ? -1 : 1)
        }
        return (Int64(date.timeIntervalSince1970.rounded()) - offset) * 1_000_000_000 + nanoseconds
    }
}
