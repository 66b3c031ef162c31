import Foundation
@testable import NimbusClient
import NimbusProtocol
import NimbusSystem

/// A scripted stand-in for nimbusd: listens on a socket in a temporary folder, accepts one
/// connection and hands each request line to `respond`, which answers through `reply`. It
/// plays the daemon's side of the wire exactly, so the client is tested byte for byte.
final class FakeDaemon: Sendable {
    let directory: String
    let path: String
    private let listener: UnixStreamSocket

    /// What the handler gets: the request, and a way to send lines back.
    struct Exchange: Sendable {
        let request: JSONValue
        let connection: UnixStreamSocket

        var method: String { request["method"]?.stringValue ?? "" }
        var id: JSONValue { request["id"] ?? .null }
        var params: JSONValue { request["params"] ?? .null }

        func send(_ line: String) { try? connection.sendAll(Array((line + "\n").utf8)) }

        func result(_ value: some Encodable) {
            send(#"{"jsonrpc":"2.0","id":\#(id.jsonText),"result":\#((try? JSONValue(encoding: value))?.jsonText ?? "null")}"#)
        }

        func error(_ error: RPCError) {
            let value = (try? JSONValue(encoding: error))?.jsonText ?? "null"
            send(#"{"jsonrpc":"2.0","id":\#(id.jsonText),"error":\#(value)}"#)
        }

        /// Ends the conversation from the daemon's side.
        func hangUp() { try? connection.shutdownWriting() }
    }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-fake-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        path = directory + "/d.sock"
        listener = try UnixStreamSocket.listen(at: path)
    }

    deinit {
        listener.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    static let hello = HelloResult(version: 1, daemonVersion: "0.1.0", instance: "default", localRoot: "/home/ann/Nimbus",
                                   cloudRoot: "/mnt/cloud", deviceName: "laptop", pid: 42)

    /// Serves one client on a thread of its own. `hello` is answered here; every other
    /// request goes to `respond`.
    func serve(_ respond: @escaping @Sendable (Exchange) -> Void) {
        let listener = self.listener
        Thread {
            // The listener is non-blocking: poll for the client, with a deadline.
            let deadline = Date().addingTimeInterval(10)
            var accepted: UnixStreamSocket?
            while accepted == nil, Date() < deadline {
                accepted = try? listener.accept()
                if accepted == nil { usleep(1000) }
            }
            guard let client = accepted else { return }
            try? client.setNonBlocking(false)
            var framer = LineFramer()
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                guard let count = try? buffer.withUnsafeMutableBytes({ try client.receive(into: $0) }), count > 0 else { break }
                for case .line(let line) in framer.push(buffer[..<count]) {
                    guard let request = try? JSONDecoder().decode(JSONValue.self, from: Data(line)) else { continue }
                    let exchange = Exchange(request: request, connection: client)
                    if exchange.method == "hello" { exchange.result(Self.hello) } else { respond(exchange) }
                }
            }
            client.close()
        }.start()
    }
}
