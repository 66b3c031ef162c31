import Foundation
import Glibc
import Testing
import NimbusTestSupport

/// Files on demand against hostile folders and clients (issue #5, DESIGN §5, §7): odd names,
/// special files where placeholders go, a crash inside evict, a full disk, mode switches and
/// protocol abuse. Each test starts the real `nimbusd --mode on-demand` (PlaceholderHarness).
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

    // MARK: Names

    @Test("a cloud file named x.nimbus appears as x.nimbus.nimbus, downloads to x.nimbus, and the cloud copy is never touched")
    func cloudFileNamedLikeAPlaceholder() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileNimbusName",
                                                                cloud: ["notes.nimbus": "my own notes, not a placeholder\n"])
        defer { s.finish() }
        let d = s.daemon
        try await d.start()
        try await d.eventually("notes.nimbus.nimbus") { PlaceholderIntegrationTests.isPlaceholder(d.local, "notes.nimbus") }
        try await d.settle()
        #expect(!PlaceholderFiles.exists(d.local + "/notes.nimbus"), "the cloud file notes.nimbus appeared under its own name before a download")
        let entry = try await d.ctlJSON(["info", "notes.nimbus"])
        #expect(entry["state"] as? String == "notDownloaded", "\(entry)")
        // What the user types: the name of the cloud file. nimbusctl must not take it for the
        // placeholder of a file "notes" that does not exist.
        let typed = try await d.ctl(["--json", "download", "notes.nimbus"])
        #expect(typed.status == 0, "nimbusctl download notes.nimbus: \(typed)")
        if typed.status != 0 {
            // Go on through the protocol, to check the daemon's part.
            let answers = try await Self.rpc(d.socketPath, [#"{"jsonrpc":"2.0","id":1,"method":"download","params":{"path":"notes.nimbus"}}"#])
            #expect(Self.outcome(answers[0]) == "ok", "\(answers[0])")
        }
        try await d.settle("after-download")
        #expect(try SyncExpect.file(d.local, "notes.nimbus", "my own notes, not a placeholder\n") == nil)
        #expect(!PlaceholderFiles.exists(d.local + "/notes.nimbus.nimbus"), "the placeholder stayed beside the downloaded notes.nimbus")
        #expect(try SyncExpect.file(d.cloud, "notes.nimbus", "my own notes, not a placeholder\n") == nil, "the cloud copy changed")
        #expect(Self.userTree(d.cloud) == ["notes.nimbus"], "cloud: \(Self.userTree(d.cloud))")
        #expect(Self.versions(d).isEmpty, "versions were made: \(Self.versions(d))")
        // The downloaded file is a file of the user's, not a placeholder: a local edit is uploaded.
        try PlaceholderFiles.write(d.local + "/notes.nimbus", Array("edited\n".utf8))
        try await d.eventually("the edit of notes.nimbus uploaded") { try SyncExpect.file(d.cloud, "notes.nimbus", "edited\n") }
        #expect(PlaceholderFiles.exists(d.cloud + "/notes") == false, "a file 'notes' appeared in the cloud")
        try await d.stop()
    }

    @Test("cloud files x and x.nimbus side by side: two placeholders, both downloadable, nothing uploaded or deleted")
    func cloudFileAndItsPlaceholderName() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileNameClash",
                                                                cloud: ["data": "the data file\n", "data.nimbus": "a file of the user's called data.nimbus\n"])
        defer { s.finish() }
        let d = s.daemon
        try await d.start()
        try await d.settle()
        try await d.settle("twice")
        #expect(PlaceholderFiles.exists(d.local + "/data.nimbus") && PlaceholderFiles.exists(d.local + "/data.nimbus.nimbus") && !PlaceholderFiles.exists(d.local + "/data"),
                "expected the placeholders data.nimbus and data.nimbus.nimbus; local: \(Self.userTree(d.local))")
        #expect(try SyncExpect.file(d.cloud, "data", "the data file\n") == nil, "the cloud copy of data changed or went")
        #expect(try SyncExpect.file(d.cloud, "data.nimbus", "a file of the user's called data.nimbus\n") == nil,
                "the cloud copy of data.nimbus was overwritten (by the placeholder of data?)")
        #expect(Self.versions(d).isEmpty, "versions were made (a cloud file was replaced or deleted): \(Self.versions(d))")
        let entries = try await d.entries()
        #expect(entries["data"]?["state"] as? String == "notDownloaded", "data: \(entries["data"] ?? [:])")
        #expect(entries["data.nimbus"]?["state"] as? String == "notDownloaded", "data.nimbus: \(entries["data.nimbus"] ?? [:])")
        try await d.stop()
    }

    @Test("a name with a newline: its placeholder is recognised, downloading it leaves the file only, nothing extra is uploaded")
    func newlineInName() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileNewline")
        defer { s.finish() }
        let d = s.daemon
        let name = "two\nlines.txt"
        try PlaceholderFiles.write(d.cloud + "/" + name, Array("content of two lines\n".utf8))
        try await d.start()
        try await d.eventually("the placeholder of the newline name") { PlaceholderIntegrationTests.isPlaceholder(d.local, name) }
        let text = PlaceholderFiles.text(d.local + "/" + name + ".nimbus") ?? ""
        #expect(text.split(separator: "\n", omittingEmptySubsequences: false).count == 7,
                "the placeholder is not 6 lines (the name's newline leaked into it):\n\(text)")
        let downloaded = try await d.ctlJSON(["download", name])
        #expect(downloaded["state"] as? String == "downloaded", "\(downloaded)")
        try await d.settle()
        #expect(Self.userTree(d.local) == [name], "local folder after the download: \(Self.userTree(d.local))")
        #expect(Self.userTree(d.cloud) == [name], "cloud folder after the download: \(Self.userTree(d.cloud))")
        try await d.stop()
    }

    @Test("a 250-byte name has no room for .nimbus: the file is downloaded, and evict refuses it with a reason instead of doing nothing")
    func nameWithoutRoomForTheSuffix() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileLongName")
        defer { s.finish() }
        let d = s.daemon
        let name = String(repeating: "n", count: 246) + ".txt"
        try PlaceholderFiles.write(d.cloud + "/" + name, Array("long name\n".utf8))
        try PlaceholderFiles.write(d.cloud + "/short.txt", Array("short\n".utf8))
        try await d.start()
        try await d.eventually("the long name downloaded (no placeholder name fits)") {
            try SyncExpect.file(d.local, name, "long name\n")
        }
        try await d.eventually("short.txt a placeholder") { PlaceholderIntegrationTests.isPlaceholder(d.local, "short.txt") }
        let entry = try await d.ctlJSON(["info", name])
        #expect(entry["state"] as? String == "downloaded", "\(entry)")
        let evict = try await d.ctl(["--json", "evict", name])
        let state = (try? await d.ctlJSON(["info", name]))?["state"] as? String
        // Either it is refused with a reason, or it really is evicted; never "ok" with the file still here.
        #expect(evict.status != 0 || state == "notDownloaded",
                "evict answered success but the file is still downloaded (state \(state ?? "?")): \(evict)")
        #expect(try SyncExpect.file(d.cloud, name, "long name\n") == nil)
        try await d.stop()
    }

    @Test("a non-UTF-8 name gets a placeholder, downloads by pathBytes, and round-trips byte for byte")
    func nonUTF8Name() async throws {
        let s = try PlaceholderSandbox.downloadingOnRequest("hostileBytes")
        defer { s.finish() }
        let d = s.daemon
        let name: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".txt".utf8)
        try SyncFiles.write(SyncFiles.join(d.cloud, name), Array("latin-1 name\n".utf8))
        try await d.start()
        try await d.eventually("the placeholder of the latin-1 name") {
            Self.exists(d.local, name + Array(".nimbus".utf8)) ? nil : "local: \(Self.userTree(d.local))"
        }
        #expect(!Self.exists(d.local, name), "downloaded although on demand")
        let base64 = Data(name).base64EncodedString()
        let answers = try await Self.rpc(d.socketPath, [
            #"{"jsonrpc":"2.0","id":1,"method":"download","params":{"pathBytes":"\#(base64)"}}"#,
        ])
        #expect(Self.outcome(answers[0]) == "ok", "\(answers[0])")
        #expect(Self.read(d.local, name) == Array("latin-1 name\n".utf8), "the downloaded file")
        #expect(!Self.exists(d.local, name + Array(".nimbus".utf8)), "the placeholder stayed")
        try await d.settle()
        #expect(Self.userTree(d.cloud).count == 1, "cloud: \(Self.userTree(d.cloud))")
        try await d.stop()
    }
}
