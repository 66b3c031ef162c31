import NimbusCore
import NimbusProtocol
import NimbusSystem
import NimbusVocabulary

/// The server thread's work on connections: accepting (with the credential check), reading
/// lines, sending answers and notifications, closing.
extension ControlServer {
    // MARK: - Accepting

    func acceptAll() {
        while true {
            let socket: UnixStreamSocket
            do {
                guard let accepted = try listener.accept() else { return }
                socket = accepted
            } catch where Errno(of: error) == .tooManyOpenFiles || Errno(of: error) == .tooManyOpenFilesInSystem {
                // Out of descriptors: stop accepting for a moment rather than spin on poll.
                log.warning("control socket: cannot accept more connections (\(error)); trying again shortly")
                pollSet.remove(listener.descriptor)
                acceptPausedUntil = SystemClock().monotonicNow + .milliseconds(250)
                return
            } catch {
                log.warning("control socket: accept failed: \(error)")
                return
            }
            admit(socket)
        }
    }

    func admit(_ socket: UnixStreamSocket) {
        guard let peer = try? socket.peerCredentials() else {
            socket.close()
            return
        }
        if peer.uid != daemonUID && peer.uid != 0 {
            logRefusal("refused a control connection from uid \(peer.uid) (pid \(peer.pid)): only uid \(daemonUID) and root may control this daemon")
            let error = RPCError(.permissionDenied, "permission denied",
                                 reason: "uid \(peer.uid) may not control the Nimbus daemon of uid \(daemonUID)",
                                 suggestion: "run nimbusctl as the user who runs nimbusd, or as root")
            refuse(socket, error)
            return
        }
        if clients.count >= limits.maximumClients {
            logRefusal("refused a control connection from pid \(peer.pid): \(clients.count) clients are connected already")
            refuse(socket, RPCError(.busy, "too many control connections", reason: "\(clients.count) clients are connected",
                                    suggestion: "close idle nimbusctl or watch sessions and try again"))
            return
        }
        nextClientID += 1
        let client = ControlClientConnection(id: nextClientID, socket: socket, pid: peer.pid, uid: peer.uid)
        clients[socket.descriptor.rawValue] = client
        clientsByID[client.id] = client
        pollSet.set(socket.descriptor, .readable)
        log.debug("\(client.description) connected")
    }

    /// At most one line a second: another user, or a client reconnecting in a loop to a busy
    /// daemon, must not be able to flood the log.
    func logRefusal(_ message: String) {
        let now = SystemClock().monotonicNow
        guard lastRefusalLogged.map({ now - $0 >= .seconds(1) }) ?? true else {
            refusalsNotLogged += 1
            return
        }
        let more = refusalsNotLogged > 0 ? " (and \(refusalsNotLogged) more refused since the last such message)" : ""
        log.warning(message + more)
        lastRefusalLogged = now
        refusalsNotLogged = 0
    }

    /// Says why, once and without waiting, then hangs up.
    func refuse(_ socket: UnixStreamSocket, _ error: RPCError) {
        if let line = try? JSONRPC.line(ErrorResponse(id: nil, error: error)) {
            _ = try? line.withUnsafeBytes { try socket.send($0) }
        }
        socket.close()
    }

    var clientCount: Int { clients.count }

    // MARK: - Client I/O

    func service(_ client: ControlClientConnection, _ what: PollEvents) {
        if what.contains(.invalid) { return close(client, reason: "its descriptor became invalid") }
        if what.contains(.readable) || what.contains(.hangUp) || what.contains(.error) { read(client) }
        guard client.isOpen else { return }
        if what.contains(.hangUp) || what.contains(.error) { return close(client, reason: nil) }
        if what.contains(.writable) { flush(client) }
        update(client)
    }

    /// Reads what is there (at most 256 KiB a round, so one busy client cannot starve the
    /// others) and handles each complete line.
    func read(_ client: ControlClientConnection) {
        var budget = 256 << 10
        while budget > 0 && client.isOpen && !client.readClosed && !client.closeAfterFlush {
            let count: Int
            do {
                count = try readBuffer.withUnsafeMutableBytes { try client.socket.receive(into: $0) }
            } catch where Errno(of: error) == .wouldBlock {
                return
            } catch {
                return close(client, reason: "reading failed: \(error)")
            }
            if count == 0 {
                client.readClosed = true
                return
            }
            budget -= count
            for item in client.framer.push(readBuffer[..<count]) {
                switch item {
                case .line(let line):
                    handler.handle(line, from: client)
                case .tooLong:
                    log.warning("\(client.description) sent a line longer than 1 MiB; disconnecting it")
                    let error = RPCError(.invalidRequest, "line longer than 1 MiB",
                                         reason: "requests are limited to \(maximumLineLength) bytes per line",
                                         suggestion: "send one JSON-RPC object per line, each under 1 MiB")
                    client.closeAfterFlush = true
                    respond(client, ErrorResponse(id: nil, error: error))
                }
                if client.closeAfterFlush || !client.isOpen { return }
            }
        }
    }

    func flush(_ client: ControlClientConnection) {
        if case .failed(let error) = client.flush() {
            close(client, reason: Errno(of: error) == .brokenPipe ? nil : "sending failed: \(error)")
        }
    }

    /// What to wait for next, or the end of the connection.
    func update(_ client: ControlClientConnection) {
        guard client.isOpen else { return }
        if client.isFinished { return close(client, reason: nil) }
        var interest: PollEvents = []
        if !client.readClosed && !client.closeAfterFlush && client.outputCount < limits.outputLimit {
            interest.insert(.readable)
        }
        if client.hasOutput { interest.insert(.writable) }
        pollSet.set(client.socket.descriptor, interest)
    }

    func close(_ client: ControlClientConnection, reason: String?) {
        guard client.isOpen else { return }
        client.isOpen = false
        pollSet.remove(client.socket.descriptor)
        clients[client.socket.descriptor.rawValue] = nil
        clientsByID[client.id] = nil
        client.socket.close()
        if client.watching { watcherCount.subtract(1, ordering: .relaxed) }
        client.listing = nil
        handler.releaseLeases(of: client.owner)
        if let reason { log.info("\(client.description) disconnected: \(reason)") } else { log.debug("\(client.description) closed") }
    }

    // MARK: - Sending

    /// Queues a line for `client` and sends what the socket takes at once.
    func send(_ client: ControlClientConnection, _ line: [UInt8]) {
        guard client.isOpen else { return }
        client.queue(line)
        flush(client)
        update(client)
    }

    func respond(_ client: ControlClientConnection, _ message: some Encodable) {
        guard let line = handler.encodeLine(message) else { return }
        send(client, line)
    }

    /// Delivers an answer computed off the server thread.
    func deliverLater(to clientID: UInt64, _ line: [UInt8]?, prepare: ((ControlClientConnection) -> Void)? = nil) {
        guard let client = clientsByID[clientID] else { return }
        client.inFlight -= 1
        prepare?(client)
        if let line { send(client, line) } else { update(client) }
    }

    /// Sends engine events to every watching client; one that cannot keep up is dropped.
    func deliver(_ batch: ControlInbox.Events) {
        let watchers = clients.values.filter(\.watching)
        guard !watchers.isEmpty else { return }
        let lines = events.notifications(for: batch, encode: handler.encodeLine)
        for client in watchers {
            for line in lines where line.isProgress == false || client.wantsProgress {
                if client.outputCount + line.bytes.count > limits.outputLimit {
                    close(client, reason: "it stopped reading its events (\(client.outputCount) bytes waiting)")
                    break
                }
                client.queue(line.bytes)
            }
            if client.isOpen {
                flush(client)
                update(client)
            }
        }
    }

    func startWatching(_ client: ControlClientConnection, progress: Bool) {
        if !client.watching { watcherCount.add(1, ordering: .relaxed) }
        client.watching = true
        client.wantsProgress = progress
    }
}
