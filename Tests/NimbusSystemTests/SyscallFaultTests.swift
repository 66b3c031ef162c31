#if DEBUG
import Dispatch
import Glibc
import Synchronization
import Testing
@testable import NimbusSystem

/// The loops above the syscall seam under what the kernel may do but a quiet test machine
/// rarely does: every call interrupted once (`EINTR`), and reads and writes that move only a
/// few bytes. Each test also checks that the faults really happened, so it cannot pass by
/// never reaching them.
@Suite struct SyscallFaultTests {
    @Test func writeAllCompletesUnderShortWrites() throws {
        try Scratch.with { scratch in
            let content = randomBytes(10_007, seed: 11)
            let faults = SyscallFaults(interruptEveryCall: true, transferLimit: 7)
            let file = try FileDescriptor.open("data", [.readWrite, .create, .exclusive], relativeTo: scratch.directory)
            try file.closeAfter {
                try faults.inject {
                    try file.writeAll(content)
                    try content[..<100].withUnsafeBytes { try file.writeAll(toAbsoluteOffset: 20_000, $0) }
                }
            }
            #expect(faults.shortenedTransfers >= 10_007 / 7 && faults.interruptions > 0)
            var expected = content + [UInt8](repeating: 0, count: 20_000 - content.count)
            expected += content[..<100]
            #expect(try scratch.read("data") == expected)
        }
    }

    @Test func readAllRetriesInterruptedAndShortReads() throws {
        try Scratch.with { scratch in
            let content = randomBytes(9_001, seed: 12)
            try scratch.write("data", content)
            let faults = SyscallFaults(interruptEveryCall: true, transferLimit: 5)
            let read = try faults.inject { try scratch.read("data") }
            #expect(read == content)
            #expect(faults.interruptions > 9_001 / 5 && faults.shortenedTransfers > 0)
        }
    }

    @Test func pollRetriesAfterAnInterruption() throws {
        let (reader, writer) = try Sys.pipe()
        let readEnd = FileDescriptor(rawValue: reader), writeEnd = FileDescriptor(rawValue: writer)
        defer { try? readEnd.close(); try? writeEnd.close() }
        try writeEnd.writeAll([42])
        let faults = SyscallFaults(interruptEveryCall: true)
        let (ready, readable) = try faults.inject {
            var polls = PollSet()
            polls.set(readEnd, .readable)
            // A deadline, not a wait: the byte is already there, so a ready poll is immediate.
            return (try polls.wait(timeout: .seconds(10)), try Sys.poll(reader, Int16(POLLIN), .seconds(10)))
        }
        #expect(ready.count == 1 && ready.first?.0 == readEnd && ready.first?.1.contains(.readable) == true)
        #expect(readable)
        #expect(faults.interruptions == 2)
    }

    /// A Unix connect interrupted by a signal left nothing under way: it is made again. (It
    /// used to wait for "writable", which an unconnected Unix socket is at once, and hand back
    /// a socket that was not connected: the first send failed with ENOTCONN.)
    @Test func anInterruptedConnectIsMadeAgain() throws {
        try Scratch.with { scratch in
            let path = scratch.path.appending("live.sock").description
            let listener = try UnixStreamSocket.listen(at: path)
            defer { listener.close() }
            let faults = SyscallFaults(interruptEveryCall: true)
            let clients = try faults.inject {
                [try UnixStreamSocket.connect(to: path), try UnixStreamSocket.connect(to: path, timeout: .seconds(10)),
                 try UnixStreamSocket.connectNonBlocking(to: path)]
            }
            defer { for client in clients { client.close() } }
            #expect(faults.interruptions >= 3)
            for (index, client) in clients.enumerated() {
                try client.sendAll([UInt8(index)])
                #expect(try listener.wait(for: .readable, timeout: .seconds(10)))
                let accepted = try #require(try listener.accept())
                defer { accepted.close() }
                #expect(try accepted.wait(for: .readable, timeout: .seconds(10)))
                var byte: [UInt8] = [99]
                #expect(try byte.withUnsafeMutableBytes { try accepted.receive(into: $0) } == 1)
                #expect(byte == [UInt8(index)], "the connections are accepted in the order they were made")
            }
        }
    }

    @Test func socketSendAllCompletesUnderShortSends() throws {
        try Scratch.with { scratch in
            let path = scratch.path.appending("socket").description
            let listener = try UnixStreamSocket.listen(at: path)
            defer { listener.close() }
            let client = try UnixStreamSocket.connect(to: path)
            defer { client.close() }
            let server = try #require(try accept(from: listener, within: .seconds(10)))
            defer { server.close() }

            let message = randomBytes(3_001, seed: 13)
            let faults = SyscallFaults(interruptEveryCall: true, transferLimit: 11)
            try faults.inject { try client.sendAll(message) }
            #expect(faults.shortenedTransfers >= 3_001 / 11 && faults.interruptions > 0)

            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            try server.setNonBlocking(false)
            while received.count < message.count {
                let count = try buffer.withUnsafeMutableBytes { try server.receive(into: $0) }
                if count == 0 { break }
                received += buffer[..<count]
            }
            #expect(received == message)
        }
    }

    @Test(arguments: [false, true])
    func copyProducesTheRightBytesUnderFaults(sparse: Bool) throws {
        try Pair.with { pair in
            let content = randomBytes(300_017, seed: 14)
            try pair.scratch.write("src/file", content)
            if sparse {
                // Data, a hole of 8 MiB, data again: the copy walks SEEK_DATA / SEEK_HOLE.
                let file = try FileDescriptor.open("src/file", .writeOnly, relativeTo: pair.scratch.directory)
                try file.closeAfter {
                    try content[..<4096].withUnsafeBytes { try file.writeAll(toAbsoluteOffset: 9 << 20, $0) }
                }
            }
            let expected = try pair.scratch.read("src/file")
            let faults = SyscallFaults(interruptEveryCall: true, transferLimit: 4093)
            _ = try faults.inject { try pair.copy("file") }
            #expect(faults.shortenedTransfers > 0 && faults.interruptions > 0)
            #expect(try pair.scratch.read("dst/file") == expected)
        }
    }

    @Test func faultsStayOnTheThreadThatInjectsThem() throws {
        let (reader, writer) = try Sys.pipe()
        defer { try? Sys.close(reader); try? Sys.close(writer) }
        let faults = SyscallFaults(interruptEveryCall: true, transferLimit: 1)
        let written = faults.inject {
            // Another suite's thread, as `swift test` runs them in parallel: it sees no faults.
            let result = Mutex<Int?>(nil)
            let done = DispatchSemaphore(value: 0)
            ProcessSupport.detachThread {
                result.withLock { $0 = try? [UInt8](repeating: 7, count: 3).withUnsafeBytes { try Sys.write(writer, $0) } }
                done.signal()
            }
            done.wait()
            return result.withLock { $0 }
        }
        #expect(written == 3)
        #expect(faults.interruptions == 0 && faults.shortenedTransfers == 0)
    }

    private func accept(from listener: UnixStreamSocket, within timeout: Duration) throws -> UnixStreamSocket? {
        guard try listener.wait(for: .readable, timeout: timeout) else { return nil }
        return try listener.accept()
    }
}
#endif
