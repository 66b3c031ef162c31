import NimbusProtocol
import NimbusSystem
import NimbusVocabulary

/// The connection's own thread: waits in poll for the socket (readable; writable while a
/// request is not yet all written) and for its wake-up pipe (a new request, `close`), with a
/// timeout at the nearest deadline. It alone reads, writes, shuts down and closes the socket.
extension Transport {
    func start() {
        ProcessSupport.detachThread(name: "nimbus-client") { [self] in
            var loop = Loop()
            let ending = serve(&loop)
            finish(ending)
            socket.close()
        }
    }

    /// What the thread keeps between turns.
    struct Loop {
        var framer = LineFramer(limit: maximumLineLength)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var polls = PollSet()
        /// Requests taken from the outbox, in order; the first may be partly written.
        var writing: [Outgoing] = []
        /// A send failed (the daemon went away): later requests fail at once, and reading
        /// goes on to the end, where the daemon's last words may be (permission_denied).
        var cannotWrite = false
        /// Set once `close` was seen: the writing side is shut down, and the thread waits
        /// until then for the daemon to close its end.
        var lingerUntil: ContinuousClock.Instant?
        /// What ends the connection when the daemon closes it.
        var ending: NimbusClientError?
    }

    /// Runs until the connection ends; returns why.
    private func serve(_ loop: inout Loop) -> NimbusClientError {
        loop.polls.set(wake.readEnd, .readable)
        while true {
            let now = ContinuousClock.now
            let (taken, closing, late, nextAnswer) = takeWork(now: now)
            for call in late {
                call.continuation.resume(throwing: NimbusClientError.timedOut(
                    socketPath: socketPath, operation: "waiting for the answer to \(call.method)", limit: call.answer?.within ?? timeout))
            }
            if closing, loop.lingerUntil == nil {
                loop.writing = []
                try? socket.shutdownWriting()
                loop.lingerUntil = now + timeout
            }
            if loop.cannotWrite || closing {
                for request in taken { fail(request.id, with: NimbusClientError.connectionClosed(socketPath: socketPath)) }
            } else {
                loop.writing += taken
            }
            if let head = loop.writing.first, head.takenBy <= now {
                return .timedOut(socketPath: socketPath, operation: "sending the \(head.method) request", limit: timeout)
            }
            if let linger = loop.lingerUntil, linger <= now { return .connectionClosed(socketPath: socketPath) }
            let deadline = [loop.writing.first?.takenBy, nextAnswer, loop.lingerUntil].compactMap { $0 }.min()
            loop.polls.set(socket.descriptor, loop.writing.isEmpty ? .readable : [.readable, .writable])
            let ready: [(FileDescriptor, PollEvents)]
            do {
                ready = try loop.polls.wait(timeout: deadline.map { max(.zero, $0 - now) })
            } catch {
                return .unreachable(socketPath: socketPath, cause: "\(error)")
            }
            for (descriptor, events) in ready {
                if descriptor == wake.readEnd {
                    wake.drain()
                    continue
                }
                if !events.isDisjoint(with: [.readable, .hangUp, .error]), let ended = read(&loop) { return ended }
                if events.contains(.writable) { write(&loop) }
            }
        }
    }

    /// Under the lock: the new requests, whether `close` was called, the calls past their
    /// answer deadline (taken out), and the nearest answer deadline still to come.
    private func takeWork(now: ContinuousClock.Instant) -> ([Outgoing], Bool, [Call], ContinuousClock.Instant?) {
        state.withLock { s in
            let taken = s.outbox
            s.outbox = []
            var late: [Call] = []
            var next: ContinuousClock.Instant?
            for (id, call) in s.pending {
                guard let by = call.answer?.by else { continue }
                if by <= now {
                    late.append(call)
                    s.pending[id] = nil
                } else {
                    next = min(next ?? by, by)
                }
            }
            return (taken, s.closing, late, next)
        }
    }

    /// Reads what is there (a few buffers at most, so that deadlines are still looked at
    /// while a daemon sends without pause). Returns why the connection ended, if it did.
    private func read(_ loop: inout Loop) -> NimbusClientError? {
        for _ in 0..<16 {
            let count: Int
            do {
                count = try loop.buffer.withUnsafeMutableBytes { try socket.receive(into: $0) }
            } catch where Errno(of: error) == .wouldBlock {
                return nil
            } catch {
                return loop.ending ?? .connectionClosed(socketPath: socketPath)
            }
            if count == 0 { return loop.ending ?? .connectionClosed(socketPath: socketPath) }
            for item in loop.framer.push(loop.buffer[..<count]) {
                switch item {
                case .line(let line):
                    if let error = dispatch(line) { loop.ending = error }
                case .tooLong:
                    return .badResponse("the daemon sent a line longer than the protocol's 1 MiB limit")
                }
            }
        }
        return nil
    }

    /// Writes as much of the queued requests as the socket takes now.
    private func write(_ loop: inout Loop) {
        while let head = loop.writing.first {
            let count: Int
            do {
                count = try head.bytes.withUnsafeBytes { try socket.send(UnsafeRawBufferPointer(rebasing: $0[head.sent...])) }
            } catch where Errno(of: error) == .wouldBlock {
                return
            } catch {
                // The daemon went away; reading will see it too, but do not keep these calls waiting.
                for request in loop.writing { fail(request.id, with: NimbusClientError.connectionClosed(socketPath: socketPath)) }
                loop.writing = []
                loop.cannotWrite = true
                return
            }
            loop.writing[0].sent += count
            if loop.writing[0].sent == head.bytes.count { loop.writing.removeFirst() }
        }
    }
}
