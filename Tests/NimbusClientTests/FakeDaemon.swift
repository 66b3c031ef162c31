import Foundation
@testable import NimbusClient
import NimbusProtocol
import NimbusSystem
import Synchronization

/// A scripted stand-in for nimbusd: listens on a socket in a temporary folder, accepts one
/// connection and hands each request line to `respond`, which answers through `reply`. It
/// plays the daemon's side of the wire exactly, so the client is tested byte for byte.
///
/// The serving thread waits in poll for the listener (then the client) and for a wake-up pipe
/// that `deinit` writes to, up to a lifetime; once started it alone accepts on, reads from and closes the
/// descriptors, so none is closed under it (accept on a closed descriptor is EBADF, or another
/// test's socket once the number is reused), and it ends as soon as the daemon is dropped.
final class FakeDaemon: Sendable {
    let directory: String
    let path: String
    private let listener: UnixStreamSocket
    private let wake: WakePipe
    /// True once `serve` has started a thread, which then owns the listener.
    private let serving = Mutex(false)

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

    /// `backlog`: how many connections wait to be accepted before a connect waits (0: one).
    init(backlog: Int32 = 128) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-fake-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        path = directory + "/d.sock"
        listener = try UnixStreamSocket.listen(at: path, backlog: backlog)
        wake = try WakePipe()
    }

    deinit {
        if serving.withLock({ $0 }) { wake.wake() } else { listener.close() }
        try? FileManager.default.removeItem(atPath: directory)
    }

    static let hello = HelloResult(version: 1, daemonVersion: "0.1.0", instance: "default", localRoot: "/home/ann/Nimbus",
                                   cloudRoot: "/mnt/cloud", deviceName: "laptop", pid: 42)

    /// How the daemon goes about its one client.
    enum Behaviour: Sendable {
        /// Accepts it, answers hello and hands every other request to `respond`.
        case answering
        /// Answers hello, then reads nothing more: a daemon stuck while the client writes
        /// (the socket's buffer fills).
        case notReadingAfterHello
        /// Never accepts: the client waits in the backlog, or to get into it when it is full.
        case notAccepting
    }

    /// What the test can ask of the serving thread.
    final class ServingThread: Sendable {
        private let ended = Mutex(false)
        var hasEnded: Bool { ended.withLock { $0 } }
        fileprivate func end() { ended.withLock { $0 = true } }
    }

    /// Serves one client on a thread of its own, as `behaviour` says. After `lifetime` the
    /// daemon goes away (closing both sockets), so that a client that waits on it for good
    /// fails then rather than holding its test for ever.
    @discardableResult
    func serve(_ behaviour: Behaviour = .answering, lifetime: Duration = .seconds(30),
               _ respond: @escaping @Sendable (Exchange) -> Void = { _ in }) -> ServingThread {
        serving.withLock { $0 = true }
        let (listener, wake, thread) = (self.listener, self.wake, ServingThread())
        Thread {
            let deadline = ContinuousClock.now + lifetime
            var polls = PollSet()
            polls.set(wake.readEnd, .readable)
            if behaviour != .notAccepting { polls.set(listener.descriptor, .readable) }
            var client: UnixStreamSocket?
            var framer = LineFramer()
            var buffer = [UInt8](repeating: 0, count: 65536)
            serving: while let ready = try? polls.wait(timeout: max(.zero, deadline - ContinuousClock.now)), !ready.isEmpty,
                           !ready.contains(where: { $0.0 == wake.readEnd }) {
                guard let client else {
                    // Blocking from here on: the scripted answers are written whole.
                    client = try? listener.accept()
                    try? client?.setNonBlocking(false)
                    if let client {
                        polls.remove(listener.descriptor)
                        polls.set(client.descriptor, .readable)
                    }
                    continue
                }
                guard let count = try? buffer.withUnsafeMutableBytes({ try client.receive(into: $0) }), count > 0 else { break }
                for case .line(let line) in framer.push(buffer[..<count]) {
                    guard let request = try? JSONDecoder().decode(JSONValue.self, from: Data(line)) else { continue }
                    let exchange = Exchange(request: request, connection: client)
                    guard exchange.method == "hello" else {
                        respond(exchange)
                        continue
                    }
                    exchange.result(Self.hello)
                    if behaviour == .notReadingAfterHello {
                        polls.remove(client.descriptor)
                        continue serving
                    }
                }
            }
            client?.close()
            listener.close()
            thread.end()
        }.start()
        return thread
    }
}
