import Foundation
import Glibc
import Testing
import NimbusTestSupport

/// Files on demand against hostile folders and clients (issue #5, DESIGN §5, §7): odd names,
/// special files where placeholders go, a crash inside evict, a full disk, mode switches and
/// protocol abuse. Each test starts the real `nimbusd --mode on-demand` (PlaceholderHarness).
/// The tests are in +Names, +Races, +Stress and, last, here: a serialized suite runs in source
/// order, file name first, and these names make it the order of the sections.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PlaceholderHostileTests {

    // MARK: Helpers of this file

    /// Every name in `root`, recursively, relative, sorted (temporary files included).
    static func tree(_ root: String) -> [String] {
        var found: [String] = []
        func walk(_ relative: String) {
            let path = relative.isEmpty ? root : root + "/" + relative
            guard let names = try? SyncFiles.names(in: path) else { return }
            for name in names.sorted() {
                let child = relative.isEmpty ? name : relative + "/" + name
                if child == ".nimbus" || child == ".nimbus-root" { continue }
                found.append(child)
                if let s = PlaceholderFiles.status(root + "/" + child), s.st_mode & S_IFMT == S_IFDIR { walk(child) }
            }
        }
        walk("")
        return found
    }

    /// The user's files of `root`: the tree without the settle markers.
    static func userTree(_ root: String) -> [String] {
        tree(root).filter { !$0.hasPrefix(".marker-") }
    }

    /// The versions kept in the cloud (names), none when the folder does not exist.
    static func versions(_ d: PlaceholderDaemon) -> [String] {
        (try? FileManager.default.subpathsOfDirectory(atPath: d.cloud + "/.nimbus/versions")) ?? []
    }

    /// Bytes of a path given as raw bytes below `root`.
    static func read(_ root: String, _ relative: [UInt8]) -> [UInt8]? {
        (try? SyncFiles.read(SyncFiles.join(root, relative))) ?? nil
    }

    static func exists(_ root: String, _ relative: [UInt8]) -> Bool {
        SyncFiles.exists(SyncFiles.join(root, relative))
    }

    /// Sends `requests` (one JSON object per line) over one connection to the control socket
    /// and returns the answers that carry an `id` (notifications are skipped), in order of
    /// arrival; fails when they do not all come within `timeout`.
    static func rpc(_ socketPath: String, _ requests: [String], timeout: Duration = .seconds(10)) async throws -> [[String: Any]] {
        let lines = try await Polling.blocking { () throws -> [String] in
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw HarnessFailure("socket: errno \(errno)") }
            defer { close(fd) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(socketPath.utf8)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (i, byte) in bytes.enumerated() where i < raw.count - 1 { raw[i] = byte }
            }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard connected == 0 else { throw HarnessFailure("connect \(socketPath): errno \(errno)") }
            try SyncFiles.writeAll(fd, Array(requests.map { $0 + "\n" }.joined().utf8), Array(socketPath.utf8))
            let deadline = ContinuousClock.now + timeout
            var buffer: [UInt8] = []
            var answers: [String] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while answers.count < requests.count {
                let left = deadline - ContinuousClock.now
                guard left > .zero else {
                    throw HarnessFailure("only \(answers.count) of \(requests.count) answers within \(timeout): \(answers)")
                }
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let millis = Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
                guard poll(&poller, 1, millis) > 0 else { continue }
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else {
                    throw HarnessFailure("the daemon closed the connection after \(answers.count) answers: \(answers)")
                }
                buffer += chunk[..<n]
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeSubrange(...newline)
                    if line.contains("\"id\"") { answers.append(line) }
                }
            }
            return answers
        }
        return try lines.map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw HarnessFailure("not a JSON object: \(line)")
            }
            return object
        }
    }

    /// The `data.name` of a JSON-RPC error answer, or "ok" for a result.
    static func outcome(_ answer: [String: Any]) -> String {
        guard let error = answer["error"] as? [String: Any] else { return answer["result"] != nil ? "ok" : "neither result nor error" }
        return ((error["data"] as? [String: Any])?["name"] as? String) ?? "error without a name (code \(error["code"] ?? "?"))"
    }

    // MARK: Protocol abuse

    @Test("download, evict, pin and unpin with hostile params: each answered with invalid_params or invalid_path, nothing touched")
    func protocolAbuse() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileProtocol", cloud: ["a.txt": "a\n"])
        defer { s.finish() }
        let d = s.daemon
        let outside = try s.sandbox.folder("outside")
        try PlaceholderFiles.write(outside + "/victim.txt", Array("outside\n".utf8))
        try SyncFiles.makeSymlink(SyncFiles.join(d.local, "escape"), to: outside)
        try await d.start()
        try await d.eventually("placeholder") { PlaceholderIntegrationTests.isPlaceholder(d.local, "a.txt") }
        var requests: [String] = []
        var expected: [String] = []
        func add(_ method: String, _ params: String) {
            requests.append(#"{"jsonrpc":"2.0","id":\#(requests.count + 1),"method":"\#(method)","params":\#(params)}"#)
            expected.append("\(method) \(params)")
        }
        add("download", #"{"path":"a.txt","wait":"yes"}"#)
        add("download", #"{"path":"a.txt","wait":1}"#)
        for method in ["download", "evict", "pin", "unpin"] {
            add(method, #"{"pathBytes":"!!!not base64!!!"}"#)
            add(method, #"{"path":"/etc/passwd"}"#)
            add(method, #"{"path":"../outside/victim.txt"}"#)
            add(method, #"{"path":"a/../../x"}"#)
            add(method, #"{"pathBytes":"YQBi"}"#)  // "a\0b"
            add(method, #"{"path":"escape/victim.txt"}"#)
            add(method, #"{"path":5}"#)
            add(method, #"{}"#)
            add(method, #"["a.txt"]"#)
        }
        let answers = try await Self.rpc(d.socketPath, requests)
        for (index, answer) in answers.enumerated() {
            let error = answer["error"] as? [String: Any]
            let code = error?["code"] as? Int
            #expect(code == -32602, "\(expected[index]): expected invalid params (-32602), got \(answer)")
        }
        #expect(d.isRunning, "nimbusd died: \(d.exitDescription)")
        let status = try await Self.rpc(d.socketPath, [#"{"jsonrpc":"2.0","id":1,"method":"status"}"#])
        #expect(Self.outcome(status[0]) == "ok", "\(status[0])")
        #expect(try PlaceholderFiles.read(outside + "/victim.txt") == Array("outside\n".utf8))
        #expect(PlaceholderIntegrationTests.isPlaceholder(d.local, "a.txt") == nil, "a hostile request downloaded a.txt")
        #expect(try SyncExpect.file(d.cloud, "a.txt", "a\n") == nil)
        try await d.stop()
    }
}
