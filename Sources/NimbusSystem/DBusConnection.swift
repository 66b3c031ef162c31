import NimbusVocabulary

/// A small D-Bus client on a Unix socket: SASL EXTERNAL, `Hello`, method calls, signals.
/// Every wait has a deadline, so a bus that is slow or stuck costs at most `timeout`; the
/// socket is non-blocking throughout. Used from one thread at a time.
public final class DBusConnection {
    public let socket: UnixStreamSocket
    /// The name the bus gave this connection (":1.42").
    public private(set) var uniqueName = ""
    /// How long one call, send or authentication step may take.
    public var timeout: Duration
    private var buffer: [UInt8] = []
    /// Messages that arrived while waiting for a reply: signals and calls, in order.
    private var pending: [DBusMessage] = []
    private var nextSerial: UInt32 = 1
    private var isClosed = false

    /// Larger than anything the notification server sends; a bigger message is a broken peer.
    static let maximumMessage = 4 << 20

    public static let busName = "org.freedesktop.DBus"
    public static let busPath = "/org/freedesktop/DBus"

    private init(socket: UnixStreamSocket, timeout: Duration) {
        self.socket = socket
        self.timeout = timeout
    }

    /// Connects to the bus at `socketPath` ("@name": abstract), authenticates as `uid` and
    /// says `Hello`.
    public static func connect(socketPath: String, uid: UInt32, timeout: Duration = .seconds(2)) throws -> DBusConnection {
        let socket: UnixStreamSocket
        do {
            socket = try UnixStreamSocket.connectNonBlocking(to: socketPath)
        } catch {
            throw DBusError.noBus("cannot connect to \(socketPath): \(Errno(of: error).map { "\($0)" } ?? "\(error)")")
        }
        let connection = DBusConnection(socket: socket, timeout: timeout)
        do {
            try connection.authenticate(uid: uid)
            let reply = try connection.call(.methodCall(destination: busName, path: busPath, interface: busName, member: "Hello"))
            connection.uniqueName = reply.body.first?.stringValue ?? ""
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    /// The SASL exchange: a NUL byte, `AUTH EXTERNAL <uid in hex>`, `OK <guid>`, `BEGIN`.
    private func authenticate(uid: UInt32) throws {
        let deadline = deadline(after: timeout)
        try write(Array("\u{0}AUTH EXTERNAL \(DBusAddress.externalAuthentication(uid: uid))\r\n".utf8), deadline: deadline)
        let answer = try readLine(deadline: deadline)
        guard answer.hasPrefix("OK ") else { throw DBusError.authenticationRejected(answer) }
        try write(Array("BEGIN\r\n".utf8), deadline: deadline)
    }

    /// Sends `message` with the next serial and returns that serial.
    @discardableResult
    public func send(_ message: DBusMessage) throws -> UInt32 {
        var message = message
        message.serial = nextSerial
        nextSerial = nextSerial == UInt32.max ? 1 : nextSerial + 1
        try write(message.encoded(), deadline: deadline(after: timeout))
        return message.serial
    }

    /// Sends a method call and waits for its reply; an error reply is thrown as `.remote`.
    /// Other messages that arrive meanwhile are kept for `nextMessage`.
    public func call(_ message: DBusMessage) throws -> DBusMessage {
        let serial = try send(message)
        let deadline = deadline(after: timeout)
        while true {
            guard let reply = try readMessage(deadline: deadline) else {
                throw DBusError.timedOut("\(message.interface ?? "").\(message.member ?? "")")
            }
            guard reply.replySerial == serial, reply.kind == .methodReturn || reply.kind == .error else {
                pending.append(reply)
                continue
            }
            if reply.kind == .error {
                throw DBusError.remote(name: reply.errorName ?? "error", message: reply.body.first?.stringValue ?? "")
            }
            return reply
        }
    }

    /// The next message that is not a reply to one of our calls: a signal, or a call to us.
    /// Nil when none came within `wait` (zero: only what is already here).
    public func nextMessage(within wait: Duration) throws -> DBusMessage? {
        if !pending.isEmpty { return pending.removeFirst() }
        return try readMessage(deadline: deadline(after: wait))
    }

    /// Asks the bus to route signals matching `rule` to us ("type='signal',interface='…'").
    public func addMatch(_ rule: String) throws {
        _ = try call(.methodCall(destination: Self.busName, path: Self.busPath, interface: Self.busName, member: "AddMatch",
                                 body: [.string(rule)]))
    }

    public func close() {
        guard !isClosed else { return }
        isClosed = true
        socket.close()
    }

    deinit { close() }

    // MARK: - Bytes with deadlines

    private func deadline(after wait: Duration) -> MonotonicInstant {
        ProcessSupport.monotonicClock + max(.zero, wait)
    }

    /// The time left until `deadline`: zero or less once it has passed.
    private func remaining(_ deadline: MonotonicInstant) -> Duration {
        deadline - ProcessSupport.monotonicClock
    }

    private func write(_ bytes: [UInt8], deadline: MonotonicInstant) throws {
        guard !isClosed else { throw DBusError.closed }
        var offset = 0
        while offset < bytes.count {
            do {
                offset += try bytes[offset...].withUnsafeBytes { try socket.send($0) }
            } catch where Errno(of: error) == .wouldBlock {
                guard try socket.wait(for: .writable, timeout: remaining(deadline)) else {
                    throw DBusError.timedOut("sending \(bytes.count) bytes")
                }
            } catch where Errno(of: error) == .brokenPipe || Errno(of: error) == .connectionReset {
                throw DBusError.closed
            }
        }
    }

    /// Reads more bytes into the buffer; false when the deadline passed first.
    private func fill(deadline: MonotonicInstant) throws -> Bool {
        guard !isClosed else { throw DBusError.closed }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            do {
                let count = try chunk.withUnsafeMutableBytes { try socket.receive(into: $0) }
                guard count > 0 else { throw DBusError.closed }
                buffer += chunk[..<count]
                return true
            } catch where Errno(of: error) == .wouldBlock {
                let wait = remaining(deadline)
                guard wait > .zero, try socket.wait(for: .readable, timeout: wait) else { return false }
            } catch where Errno(of: error) == .connectionReset {
                throw DBusError.closed
            }
        }
    }

    private func readLine(deadline: MonotonicInstant) throws -> String {
        while true {
            if let end = buffer.indices.dropLast().first(where: { buffer[$0] == 13 && buffer[$0 + 1] == 10 }) {
                let line = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 2)
                return line
            }
            guard buffer.count < 4096 else { throw DBusError.malformed("an authentication line of over 4 KiB") }
            guard try fill(deadline: deadline) else { throw DBusError.timedOut("authentication") }
        }
    }

    private func readMessage(deadline: MonotonicInstant) throws -> DBusMessage? {
        while true {
            if buffer.count >= 16 {
                guard let total = DBusMessage.totalLength(ofPrefix: buffer[..<16]), total <= Self.maximumMessage else {
                    throw DBusError.malformed("a message header that is not D-Bus, or a message over 4 MiB")
                }
                if buffer.count >= total {
                    let bytes = Array(buffer[..<total])
                    buffer.removeFirst(total)
                    return try DBusMessage.decode(bytes)
                }
            }
            guard try fill(deadline: deadline) else { return nil }
        }
    }
}
