import FoundationEssentials
import NimbusProtocol
import NimbusSystem
import Synchronization

/// One connection's plumbing. Calls never make a system call that can wait: a request is
/// queued and the connection's own thread (`Transport+Thread.swift`) writes it when the
/// socket takes it, reads what the daemon sends, splits it into lines (bounded by the
/// protocol's 1 MiB), hands each response to the call waiting for its id and each
/// notification to the subscribers. So a daemon that stops reading (its socket buffer full)
/// holds none of the caller's threads, which in async code are the cooperative pool's, one
/// per core, that every other task of the program is waiting for.
///
/// Deadlines: a request the daemon has not taken off the socket within `timeout` ends the
/// connection with `.timedOut` (the stream may hold half of it, and the daemon is stuck);
/// a call made with `answerWithin` (hello) that is not answered in time fails alone.
/// Ownership: the thread alone uses and closes the descriptor (so its number cannot be
/// reused under it); `state` is shared, under its lock; the wake-up pipe lives as long as
/// this object.
final class Transport: Sendable {
    let socketPath: String
    /// How long the daemon may take to take a request off the socket.
    let timeout: Duration
    let socket: UnixStreamSocket
    let wake: WakePipe
    let state = Mutex(State())

    struct State {
        var nextID: Int64 = 0
        var pending: [Int64: Call] = [:]
        /// Requests not yet taken by the thread, in order.
        var outbox: [Outgoing] = []
        var subscribers: [Int: AsyncStream<DaemonNotification>.Continuation] = [:]
        var nextSubscriber = 0
        /// Set once the connection is finished; every later call fails with it.
        var failure: NimbusClientError?
        /// `close` was called: the thread shuts down the writing side and winds up.
        var closing = false
    }

    /// A call waiting for its response.
    struct Call {
        var continuation: CheckedContinuation<[UInt8], any Error>
        var method: String
        /// For a call that must be answered within a limit: the limit and when it ends.
        var answer: (within: Duration, by: ContinuousClock.Instant)?
    }

    /// A request line on its way to the socket.
    struct Outgoing {
        var id: Int64
        var method: String
        var bytes: [UInt8]
        var sent = 0
        /// When the daemon must have taken all of it.
        var takenBy: ContinuousClock.Instant
    }

    /// Takes over a connected socket (made non-blocking here). Throws `SystemError`.
    init(socket: UnixStreamSocket, socketPath: String, timeout: Duration) throws {
        try socket.setNonBlocking(true)
        self.wake = try WakePipe()
        self.socket = socket
        self.socketPath = socketPath
        self.timeout = timeout
    }

    /// Sends one request and waits for its response line (an error response is thrown as
    /// `NimbusClientError.server`). With `answerWithin`, no answer by then fails the call with
    /// `.timedOut`.
    func request(_ method: String, _ params: some Encodable & Sendable, answerWithin: Duration? = nil) async throws -> [UInt8] {
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
                let now = ContinuousClock.now
                let refusal: (any Error)? = state.withLock { s in
                    if let failure = s.failure { return failure }
                    if Task.isCancelled { return CancellationError() }
                    s.pending[id] = Call(continuation: continuation, method: method, answer: answerWithin.map { ($0, now + $0) })
                    s.outbox.append(Outgoing(id: id, method: method, bytes: line, takenBy: now + timeout))
                    return nil
                }
                if let refusal { return continuation.resume(throwing: refusal) }
                wake.wake()
            }
        } onCancel: {
            fail(id, with: CancellationError())
        }
    }

    func fail(_ id: Int64, with error: any Error) {
        state.withLock { $0.pending.removeValue(forKey: id) }?.continuation.resume(throwing: error)
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

    /// Ends the conversation: no more requests; the thread shuts down the writing side and
    /// ends when the daemon closes its end (or `timeout` later).
    func close() {
        finish(.connectionClosed(socketPath: socketPath))
        state.withLock { $0.closing = true }
        wake.wake()
    }

    /// Routes one line. Returns the error to end the connection with when the daemon sent an
    /// error it could not attach to a request (a refusal before closing, for example).
    func dispatch(_ line: [UInt8]) -> NimbusClientError? {
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
            guard let call = state.withLock({ $0.pending.removeValue(forKey: id) }) else { return nil }
            if let error = head.error {
                call.continuation.resume(throwing: NimbusClientError.server(error))
            } else {
                call.continuation.resume(returning: line)
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
    func finish(_ error: NimbusClientError) {
        let (pending, subscribers, reason) = state.withLock { s in
            if s.failure == nil { s.failure = error }
            defer {
                s.pending = [:]
                s.subscribers = [:]
                s.outbox = []
            }
            return (Array(s.pending.values), Array(s.subscribers.values), s.failure ?? error)
        }
        for call in pending { call.continuation.resume(throwing: reason) }
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
