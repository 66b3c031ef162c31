import Foundation
import NimbusProtocol
import NimbusSystem
import NimbusVocabulary
import Testing
import NimbusTestSupport

/// A JSON value, for comparing answers by structure (PROTOCOL.md examples) in tests.
enum WireJSON: Codable, Equatable, CustomStringConvertible {
    case null, bool(Bool), int(Int64), double(Double), string(String), array([WireJSON]), object([String: WireJSON])

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let v = try? c.decode(Bool.self) { self = .bool(v) }
        else if let v = try? c.decode(Int64.self) { self = .int(v) }
        else if let v = try? c.decode(Double.self) { self = .double(v) }
        else if let v = try? c.decode(String.self) { self = .string(v) }
        else if let v = try? c.decode([WireJSON].self) { self = .array(v) }
        else { self = .object(try c.decode([String: WireJSON].self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let v): try c.encode(v)
        case .int(let v): try c.encode(v)
        case .double(let v): try c.encode(v)
        case .string(let v): try c.encode(v)
        case .array(let v): try c.encode(v)
        case .object(let v): try c.encode(v)
        }
    }

    static func parse(_ bytes: some Collection<UInt8>) throws -> WireJSON {
        try JSONDecoder().decode(WireJSON.self, from: Data(bytes))
    }

    subscript(key: String) -> WireJSON? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    var string: String? { if case .string(let v) = self { v } else { nil } }
    var int: Int64? { if case .int(let v) = self { v } else { nil } }
    var bool: Bool? { if case .bool(let v) = self { v } else { nil } }
    var array: [WireJSON]? { if case .array(let v) = self { v } else { nil } }

    /// `error.data.name` of an error response.
    var errorName: String? { self["error"]?["data"]?["name"]?.string }

    var description: String {
        (try? String(decoding: JSONRPC.makeEncoder().encode(self), as: UTF8.self)) ?? "?"
    }
}

/// A raw NDJSON client on a non-blocking socket, with deadlines on every read.
final class SocketClient {
    let socket: UnixStreamSocket
    private var framer = LineFramer(limit: 8 << 20)
    private var lines: [[UInt8]] = []
    /// Notifications seen while waiting for answers.
    var notifications: [WireJSON] = []
    private(set) var sawEndOfFile = false
    private var nextID: Int64 = 1000

    init(_ path: String) throws {
        socket = try UnixStreamSocket.connect(to: path)
        try socket.setNonBlocking(true)
    }

    deinit { socket.close() }

    /// Sends bytes, waiting for room up to `timeout`; throws when the peer is gone.
    func sendRaw(_ bytes: [UInt8], timeout: Double = 10) throws {
        let deadline = ContinuousClock.now + .seconds(timeout)
        var offset = 0
        while offset < bytes.count {
            do {
                offset += try bytes[offset...].withUnsafeBytes { try socket.send($0) }
            } catch where Errno(of: error) == .wouldBlock {
                if ContinuousClock.now > deadline { throw HarnessFailure("the daemon did not read what was sent") }
                var set = PollSet()
                set.set(socket.descriptor, .writable)
                _ = try set.wait(timeout: .milliseconds(100))
            }
        }
    }

    func send(_ text: String) throws { try sendRaw(Array((text + "\n").utf8)) }

    /// The next line, or nil at end of file.
    func readLine(timeout: Double = 20) throws -> [UInt8]? {
        let deadline = ContinuousClock.now + .seconds(timeout)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while lines.isEmpty {
            if sawEndOfFile { return nil }
            let count: Int
            do {
                count = try buffer.withUnsafeMutableBytes { try socket.receive(into: $0) }
            } catch where Errno(of: error) == .wouldBlock {
                let left = ContinuousClock.now.duration(to: deadline)
                if left <= .zero { throw HarnessFailure("no answer within \(timeout) s") }
                var set = PollSet()
                set.set(socket.descriptor, .readable)
                _ = try set.wait(timeout: min(left, .seconds(1)))
                continue
            } catch where Errno(of: error) == .connectionReset {
                sawEndOfFile = true
                return nil
            }
            if count == 0 { sawEndOfFile = true; break }
            for item in framer.push(buffer[..<count]) {
                if case .line(let line) = item { lines.append(line) }
            }
        }
        return lines.isEmpty ? nil : lines.removeFirst()
    }

    /// The next message that is not a notification.
    func readAnswer(timeout: Double = 20) throws -> WireJSON {
        while true {
            guard let line = try readLine(timeout: timeout) else { throw HarnessFailure("the daemon closed the connection") }
            let value = try WireJSON.parse(line)
            if value["id"] == nil, value["method"] != nil { notifications.append(value); continue }
            return value
        }
    }

    /// Sends a request and returns the answer with its id.
    func call(_ method: String, _ params: String? = nil, timeout: Double = 20) throws -> WireJSON {
        nextID += 1
        let id = nextID
        let paramsPart = params.map { ",\"params\":\($0)" } ?? ""
        try send("{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"\(method)\"\(paramsPart)}")
        while true {
            let answer = try readAnswer(timeout: timeout)
            if answer["id"]?.int == id { return answer }
        }
    }

    /// The result of a successful call; throws with the error otherwise.
    func result(_ method: String, _ params: String? = nil, timeout: Double = 20) throws -> WireJSON {
        let answer = try call(method, params, timeout: timeout)
        guard let result = answer["result"] else { throw HarnessFailure("\(method) failed: \(answer)") }
        return result
    }
}

/// A real `nimbusd` process on temporary folders, without a notification socket, stopped
/// (SIGTERM, then waited for) and its folders removed at the end.
final class DaemonProcess: NimbusdProcess {
    let root: String
    let deviceName: String
    /// The folders come from the config file (`writeConfig`), not from flags, which would
    /// override it: a reload can then change them.
    let foldersInConfig: Bool

    /// Creates the folders (the temporary root is 0755, so another user can reach a socket
    /// placed in it) and runs `prepare` on them before the daemon starts.
    init(socketPath: String? = nil, socketInRoot: Bool = false, deviceName: String = "laptop", foldersInConfig: Bool = false,
         prepare: (DaemonProcess) throws -> Void = { _ in }) throws {
        let base = try TemporaryDirectory.make("nimbus-control", in: FileManager.default.temporaryDirectory.path)
        root = base
        self.deviceName = deviceName
        self.foldersInConfig = foldersInConfig
        super.init(name: "nimbusd " + deviceName, local: base + "/local", cloud: base + "/cloud", stateDirectory: base + "/state",
                   socketPath: socketPath ?? (socketInRoot ? base + "/nimbus.sock" : base + "/runtime/nimbus/test.sock"),
                   logPath: base + "/daemon.log", notifyPath: nil)
        for dir in [local, cloud, base + "/home"] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: base)
        try prepare(self)
        try start()
    }

    deinit {
        stop()
        TemporaryDirectory.remove(root, label: "control test")
    }

    func start() throws {
        let folders = foldersInConfig ? ["--state-dir", stateDirectory, "--socket", socketPath] : pairArguments
        try launch(arguments: folders + ["--device-name", deviceName, "--log-level", "debug"],
                   environment: ["HOME": root + "/home", "XDG_CONFIG_HOME": root + "/config", "XDG_STATE_HOME": root + "/xstate",
                                 "XDG_RUNTIME_DIR": root + "/runtime", "PATH": "/usr/bin:/bin"])
    }

    /// Waits until the daemon answers `status` with phase idle.
    func waitUntilIdle(timeout: Duration = .seconds(30)) throws {
        try Polling.wait("the daemon at \(socketPath) to be idle (log: \(log))", timeout: timeout) {
            guard isRunning else { throw HarnessFailure("nimbusd exited: \(log)") }
            guard let client = try? SocketClient(socketPath), let status = try? client.result("status", timeout: 5) else { return false }
            return status["phase"]?.string == "idle"
        }
    }

    func client() throws -> SocketClient { try SocketClient(socketPath) }

    func stop() { endBlocking(within: .seconds(15)) }

    /// Sends SIGKILL (a crash) and waits for the process to end.
    func crash() { killIfRunning() }

    func write(_ relative: String, _ text: String, in side: String? = nil) throws {
        let url = URL(fileURLWithPath: (side ?? local) + "/" + relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    /// The config file a reload reads (`$XDG_CONFIG_HOME/nimbus/default.conf`).
    func writeConfig(_ text: String) throws { try write("default.conf", text, in: root + "/config/nimbus") }

    func read(_ relative: String, in side: String) -> String? {
        try? String(contentsOfFile: side + "/" + relative, encoding: .utf8)
    }
}
