import Foundation
import Glibc
import Testing
import NimbusTestSupport

// Protocol abuse: hostile parameters for download, evict, pin and unpin.
extension PlaceholderHostileTests {
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
