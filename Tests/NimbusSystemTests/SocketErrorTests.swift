import NimbusVocabulary
import Testing
@testable import NimbusSystem

/// Sockets and datagrams fail with a `SystemError` that names the operation
/// and the path, as files do: a log line or `nimbusctl` message says what failed where.
@Suite struct SocketErrorTests {
    @Test func streamSocketErrorsNameTheOperationAndPath() throws {
        try Scratch.with { scratch in
            let missing = scratch.path.appending("missing.sock").description
            #expect(throws: Errno.noSuchFile.at("connect", missing)) { try UnixStreamSocket.connect(to: missing) }
            #expect(throws: Errno.noSuchFile.at("connect", missing)) { try UnixStreamSocket.connectNonBlocking(to: missing) }

            let path = scratch.path.appending("live.sock").description
            let listener = try UnixStreamSocket.listen(at: path)
            defer { listener.close() }
            #expect(listener.path == path)
            // Nothing waiting: nil, not an error.
            #expect(try listener.accept() == nil)
            // (The second listen connects to see whether someone listens: that connection waits.)
            #expect(throws: Errno.addressInUse.at("bind", path)) { try UnixStreamSocket.listen(at: path) }

            let tooLong = "/" + String(repeating: "x", count: 200)
            #expect(throws: Errno.nameTooLong.at("connect", tooLong)) { try UnixStreamSocket.connect(to: tooLong) }

            // A non-blocking receive with nothing there is EAGAIN named with the socket's path.
            let client = try UnixStreamSocket.connectNonBlocking(to: path)
            defer { client.close() }
            var byte: [UInt8] = [0]
            let error = #expect(throws: SystemError.self) { try byte.withUnsafeMutableBytes { try client.receive(into: $0) } }
            #expect(error == Errno.wouldBlock.at("receive", path))
            #expect(Errno(of: try #require(error)) == .wouldBlock)
        }
    }

    @Test func datagramErrorsNameTheOperationAndPath() throws {
        try Scratch.with { scratch in
            let missing = scratch.path.appending("notify.sock").description
            let socket = try UnixDatagramSocket()
            defer { socket.close() }
            #expect(throws: Errno.noSuchFile.at("send", missing)) { try socket.send([1], to: missing) }

            let bound = try UnixDatagramSocket.bound(to: missing)
            defer { bound.close() }
            #expect(throws: Errno.addressInUse.at("bind", missing)) { try UnixDatagramSocket.bound(to: missing) }
            try socket.send(Array("READY=1".utf8), to: missing)
            #expect(try bound.receive(timeout: .seconds(10)) == Array("READY=1".utf8))
        }
    }

    @Test func theErrnoIsFoundInEitherShape() {
        #expect(Errno(of: Errno.busy) == .busy)
        #expect(Errno(of: Errno.busy.at("open", "a")) == .busy)
        #expect(Errno(of: CancellationError()) == nil)
    }
}
