import CNimbus
import Glibc
import NimbusVocabulary

/// A Unix datagram socket: the transport of systemd's notification protocol (sd_notify).
/// Every failure is a `SystemError` naming the operation and the socket path concerned.
public struct UnixDatagramSocket: Sendable {
    public let descriptor: FileDescriptor
    /// Where the socket is bound (what errors of `receive` name); nil for a sending socket.
    public private(set) var boundPath: String?

    /// An unbound socket for sending. The corresponding C function is `socket`.
    public init() throws {
        descriptor = FileDescriptor(rawValue: try attributing("socket", "(datagram)") { try Sys.unixSocket(SOCK_DGRAM) })
    }

    private var shownPath: String { boundPath ?? "(unbound datagram socket)" }

    /// A socket bound to `path` (a leading "@" means the abstract namespace), for receiving.
    public static func bound(to path: String) throws -> UnixDatagramSocket {
        var socket = try UnixDatagramSocket()
        socket.boundPath = path
        do {
            try attributing("bind", path) {
                try withSocketAddress(path) { address, length in try Sys.bind(socket.descriptor.rawValue, address, length) }
            }
        } catch {
            try? socket.descriptor.close()
            throw error
        }
        return socket
    }

    /// Sends one datagram to `path` ("@name" for an abstract socket). The C function is `sendto`.
    public func send(_ bytes: [UInt8], to path: String) throws {
        try attributing("send", path) {
            try withSocketAddress(path) { address, length in
                // Never wait for the receiver: a status line is not worth stalling sync for.
                try bytes.withUnsafeBytes { try Sys.sendDatagram(descriptor.rawValue, $0, to: address, length) }
            }
        }
    }

    /// Waits up to `timeout` (nil: for ever) for a datagram; nil on timeout.
    public func receive(timeout: Duration?) throws -> [UInt8]? {
        guard try attributing("poll", shownPath, { try Sys.poll(descriptor.rawValue, Int16(POLLIN), timeout) }) else {
            return nil
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = try attributing("receive", shownPath) {
            try buffer.withUnsafeMutableBytes { try Sys.receiveDatagram(descriptor.rawValue, $0) }
        }
        return Array(buffer[..<count])
    }

    /// Sends one datagram to `path` carrying a duplicate of `passed` (SCM_RIGHTS), as
    /// systemd's `FDSTORE=1` wants. The C function is `sendmsg`.
    public func send(_ bytes: [UInt8], passing passed: FileDescriptor, to path: String) throws {
        try attributing("send", path) {
            try bytes.withUnsafeBytes { try Sys.sendDatagram(descriptor.rawValue, $0, passing: passed.rawValue, to: path) }
        }
    }

    /// Waits up to `timeout` (nil: for ever) for a datagram and the descriptor it carried, if
    /// any (close-on-exec, the caller's to close); nil on timeout. The C function is `recvmsg`.
    public func receiveWithDescriptor(timeout: Duration?) throws -> (bytes: [UInt8], descriptor: FileDescriptor?)? {
        guard try attributing("poll", shownPath, { try Sys.poll(descriptor.rawValue, Int16(POLLIN), timeout) }) else {
            return nil
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var received: Int32 = -1
        let count = try attributing("receive", shownPath) {
            try buffer.withUnsafeMutableBytes { try Sys.receiveDatagram(descriptor.rawValue, $0, descriptor: &received) }
        }
        return (Array(buffer[..<count]), received >= 0 ? FileDescriptor(rawValue: received) : nil)
    }

    public func close() { try? descriptor.close() }
}

/// Builds a `sockaddr_un` for `path`; "@name" is the abstract namespace (leading NUL).
func withSocketAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) throws -> R {
    var bytes = Array(path.utf8)
    let abstract = bytes.first == UInt8(ascii: "@")
    if abstract { bytes[0] = 0 }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard bytes.count < capacity else { throw Errno.nameTooLong }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (index, byte) in bytes.enumerated() { raw[index] = byte }
    }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
    return try withUnsafePointer(to: &address) { pointer in
        try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, length) }
    }
}
