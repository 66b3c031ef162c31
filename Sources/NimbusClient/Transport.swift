import FoundationEssentials
import NimbusProtocol
import NimbusSystem
import Synchronization

/// One connection's plumbing: writes requests, and a reader thread that splits the stream
/// into lines (bounded by the protocol's 1 MiB), hands each response to the call waiting for
/// its id and each notification to the subscribers.
///
/// The socket stays blocking: requests are small and the daemon reads them promptly, and a
/// thread blocked in `recv` costs nothing. Closing shuts down the writing side; the daemon
/// then closes its end, the reader sees end of file and closes the descriptor. Only the
/// reader closes it, so the number cannot be reused while the thread still reads from it;
/// it does so holding `sending`, and nothing writes or shuts down after that: the number
/// may by then be another connection's (the seam's EBADF check found `close` doing so).
final class Transport: Sendable {
    let socket: UnixStreamSocket
    let socketPath: String
    private let state = Mutex(State())
    /// Serialises writers so that two requests never interleave on the wire; true once the
    /// reader has closed the descriptor.
    private let sending = Mutex(false)

    struct State {
        var nextID: Int64 = 0
        var pending: [Int64: CheckedContinuation<[UInt8], any Error>] = [:]
        var subscribers: [Int: AsyncStream<DaemonNotification>.Continuation] = [:]
        var nextSubscriber = 0
        /// Set once the connection is finished; every later call fails with it.
        var failure: NimbusClientError?
    }

    init(socket: UnixStreamSocket, socketPath: String) {
        self.socket = socket
        self.socketPath = socketPath
    }

    func start() {
        ProcessSupport.detachThread { [self] in readLoop() }
    }

    /// Sends one request and waits for its response line (an error response is thrown as
    /// `NimbusClientError.server`).
    func request(_ method: String, _ params: some Encodable & Sendable) async throws -> [UInt8] {
        let id = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        let line: [UInt8]
        do {
            line = try JSONRPC.line(RequestLine(id: .number(id), method: method, params: params))
        } catch {
            throw NimbusClientError.invalidArgument("the parameters of \(method)", reason: "they cannot be encoded as JSON: \(error)")
        }
        guard line.count <= maximumLineLength + 1 else {
            throw NimbusClientError.invalidArgument("the \(method) request", reason: "it is longer than the protocol's 1 MiB line limit")
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8], any Error>) in
                let refusal: (any Error)? = state.withLock { s in
                    if let failure = s.failure { return failure }
                    if Task.isCancelled { return CancellationError() }
                    s.pending[id] = continuation
                    return nil
                }
                if let refusal { return continuation.resume(throwing: refusal) }
                do {
                    try sending.withLock { closed in
                        guard !closed else { throw NimbusClientError.connectionClosed(socketPath: socketPath) }
                        try socket.sendAll(line)
                    }
                } catch {
                    // The daemon went away; the reader will see it too, but do not wait for it.
                    fail(id, with: NimbusClientError.connectionClosed(socketPath: socketPath))
                }
            }
        } onCancel: {
            fail(id, with: CancellationError())
        }
    }

    private func fail(_ id: Int64, with error: any Error) {
        state.withLock { $0.pending.removeValue(forKey: id) }?.resume(throwing: error)
    }

    /// A stream of every notification from now on, until the connection ends or the stream
    /// is dropped. The newest 10 000 are kept for a slow reader.
    func subscribe() -> AsyncStream<DaemonNotification> {
        let (stream, continuation) = AsyncStream.makeStream(of: DaemonNotification.self,
                                                             bufferingPolicy: .bufferingNewest(10_000))
        let key: Int? = state.withLock { s in
            guard s.failure == nil else { return nil }
            s.nextSubscriber += 1
            s.subscribers[s.nextSubscriber] = continuation
            return s.nextSubscriber
        }
        guard let key else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }

    /// Ends the conversation: no more requests; the reader finishes when the daemon closes.
    func close() {
        finish(.connectionClosed(socketPath: socketPath))
        sending.withLock { closed in
            if !closed { try? socket.shutdownWriting() }
        }
    }

    // MARK: Reading

    private func readLoop() {
        var framer = LineFramer(limit: maximumLineLength)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var ending = NimbusClientError.connectionClosed(socketPath: socketPath)
        reading: while true {
            let count: Int
            do {
                count = try buffer.withUnsafeMutableBytes { try socket.receive(into: $0) }
            } catch {
                break reading
            }
            if count == 0 { break reading }
            for item in framer.push(buffer[..<count]) {
                switch item {
                case .line(let line):
                    if let error = dispatch(line) { ending = error }
                case .tooLong:
                    ending = .badResponse("the daemon sent a line longer than the protocol's 1 MiB limit")
                    break reading
                }
            }
        }
        finish(ending)
        sending.withLock { closed in
            closed = true
            socket.close()
        }
    }

    /// Routes one line. Returns the error to end the connection with when the daemon sent an
    /// error it could not attach to a request (a refusal before closing, for example).
    private func dispatch(_ line: [UInt8]) -> NimbusClientError? {
        let decoder = JSONRPC.makeDecoder()
        guard let head = try? decoder.decode(MessageHead.self, from: Data(line)) else { return nil }
        switch head.kind {
        case .response, .errorResponse:
            guard case .number(let id)? = head.id else {
                // An error with a null id: the daemon could not tie it to a request, so it
                // concerns all of them (permission_denied is sent this way, then it closes).
                if let error = head.error {
                    finish(.server(error))
                    return .server(error)
                }
                return nil
            }
            guard let continuation = state.withLock({ $0.pending.removeValue(forKey: id) }) else { return nil }
            if let error = head.error {
                continuation.resume(throwing: NimbusClientError.server(error))
            } else {
                continuation.resume(returning: line)
            }
        case .notification:
            let notification = DaemonNotification(line: line, method: head.method ?? "", decoder: decoder)
            let subscribers = state.withLock { Array($0.subscribers.values) }
            for subscriber in subscribers { subscriber.yield(notification) }
        case .request, .invalid:
            break  // the daemon sends no requests; ignore what cannot be read
        }
        return nil
    }

    /// Fails every waiting call and ends every stream; the first reason given sticks.
    private func finish(_ error: NimbusClientError) {
        let (pending, subscribers) = state.withLock { s in
            if s.failure == nil { s.failure = error }
            defer {
                s.pending = [:]
                s.subscribers = [:]
            }
            return (Array(s.pending.values), Array(s.subscribers.values))
        }
        let reason = state.withLock { $0.failure } ?? error
        for continuation in pending { continuation.resume(throwing: reason) }
        for subscriber in subscribers { subscriber.finish() }
    }
}

/// A request whose params may be any Encodable (the protocol's `Request` wants Codable).
private struct RequestLine<Params: Encodable & Sendable>: Encodable, Sendable {
    var jsonrpc = JSONRPC.version
    var id: RequestID
    var method: String
    var params: Params
}
