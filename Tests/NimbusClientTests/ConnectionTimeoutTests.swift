import Foundation
@testable import NimbusClient
import NimbusProtocol
import NimbusSystem
import NimbusTestSupport
import NimbusTestTraits
import Synchronization
import Testing

/// A daemon that does not accept, or stops reading, holds none of the caller's threads: the
/// call fails with `timed_out` naming the socket and the operation, and meanwhile another task
/// on the same thread completes. The suite runs each test on a thread of its own with its
/// child tasks (one thread, like a cooperative pool with every other thread busy), so a call
/// that blocked that thread in `connect` or `send` would keep the other task from finishing
/// first (and the fake daemons give up after their lifetime, so the test then fails rather
/// than hangs).
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(1)))
struct ConnectionTimeoutTests {
    /// Generous: the other task's round trip (a thread, a connect, two answers) must end
    /// within it on a loaded machine.
    static let limit: Duration = .seconds(5)

    /// Starts `stuck` as a child task, then makes a round trip to a daemon that answers;
    /// returns the order in which the two ended and the error `stuck` threw.
    func whileStuck(_ stuck: @escaping @Sendable () async throws -> Void) async throws -> (order: [String], error: NimbusClientError?) {
        let order = Mutex<[String]>([])
        let answering = try FakeDaemon()
        answering.serve { exchange in exchange.result(ConnectionTests.status) }
        async let failure: NimbusClientError? = {
            defer { order.withLock { $0.append("stuck call ended") } }
            do {
                try await stuck()
                return nil
            } catch let error as NimbusClientError {
                return error
            }
        }()
        let other = try await NimbusConnection.connect(to: .socket(answering.path))
        #expect(try await other.status() == ConnectionTests.status)
        order.withLock { $0.append("other task ended") }
        let error = try await failure
        return (order.withLock { $0 }, error)
    }

    func expectTimedOut(_ error: NimbusClientError?, _ socketPath: String, _ operation: String) {
        #expect(error == .timedOut(socketPath: socketPath, operation: operation, limit: Self.limit), "\(String(describing: error))")
        guard let error else { return }
        #expect(error.name == "timed_out")
        #expect(error.message == "the Nimbus daemon did not respond in time")
        #expect(error.reason == "\(operation) on \(socketPath) took longer than 5 s")
        #expect(error.isUnreachable && Failure(error).exitCode == 69)
    }

    @Test func aDaemonThatNeverAcceptsTimesOutWaitingForHello() async throws {
        let daemon = try FakeDaemon()
        daemon.serve(.notAccepting)
        let (order, error) = try await whileStuck {
            _ = try await NimbusConnection.connect(to: .socket(daemon.path), timeout: Self.limit)
        }
        #expect(order == ["other task ended", "stuck call ended"])
        expectTimedOut(error, daemon.path, "waiting for the answer to hello")
    }

    /// The listener's backlog is full (one connection waits in it already), so connect(2)
    /// itself waits: on a thread of its own, for `limit` at most.
    @Test func aFullBacklogTimesOutTheConnect() async throws {
        let daemon = try FakeDaemon(backlog: 0)
        daemon.serve(.notAccepting)
        let filler = try UnixStreamSocket.connectNonBlocking(to: daemon.path)
        defer { filler.close() }
        let (order, error) = try await whileStuck {
            _ = try await NimbusConnection.connect(to: .socket(daemon.path), timeout: Self.limit)
        }
        #expect(order == ["other task ended", "stuck call ended"])
        expectTimedOut(error, daemon.path, "connecting")
    }

    /// The daemon stops reading after hello; requests of 1 MB each (4 MB, more than any
    /// socket buffer) cannot all be written, and every call fails once the first is overdue.
    @Test func aDaemonThatStopsReadingTimesOutTheSend() async throws {
        let daemon = try FakeDaemon()
        daemon.serve(.notReadingAfterHello)
        let connection = try await NimbusConnection.connect(to: .socket(daemon.path), timeout: Self.limit)
        let path = String(repeating: "x", count: 1_000_000)
        let (order, error) = try await whileStuck {
            let errors = await withTaskGroup(of: NimbusClientError?.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        do {
                            _ = try await connection.callRaw("stat", ["path": path])
                            return nil
                        } catch {
                            return error as? NimbusClientError
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(errors.map { $0?.name }) == ["timed_out"], "every call fails alike: \(errors)")
            if let first = errors.first, let first { throw first }
        }
        #expect(order == ["other task ended", "stuck call ended"])
        expectTimedOut(error, daemon.path, "sending the stat request")
        // The connection is over: a later call fails at once with the same error.
        await #expect(throws: NimbusClientError.timedOut(socketPath: daemon.path, operation: "sending the stat request", limit: Self.limit)) {
            try await connection.status()
        }
    }

    /// A daemon that reads a request but never answers it: the call fails after the
    /// connection's answer timeout with `timed_out` naming the socket and the method, holding
    /// no thread meanwhile, and the connection still serves the calls after it. Before, only
    /// hello was bounded, and the call waited for ever (here: until the fake daemon left).
    @Test func aRequestNeverAnsweredTimesOutAlone() async throws {
        let daemon = try FakeDaemon()
        daemon.serve { exchange in
            if exchange.method == "locks" { exchange.result(LocksResult(locks: [])) }  // status: never answered
        }
        let connection = try await NimbusConnection.connect(to: .socket(daemon.path), timeout: Self.limit, answerTimeout: Self.limit)
        let (order, error) = try await whileStuck { _ = try await connection.status() }
        #expect(order == ["other task ended", "stuck call ended"])
        expectTimedOut(error, daemon.path, "waiting for the answer to status")
        #expect(try await connection.locks().isEmpty, "the connection still serves")
    }

    /// Calls that wait by design are not cut short: an acquire that waits gets its own wait
    /// on top of the answer timeout (`lock --wait 60`), one without a limit and a download
    /// that waits for its file get none; every other call gets the answer timeout.
    @Test func aCallThatWaitsByDesignGetsItsOwnWaitOnTop() async throws {
        let daemon = try FakeDaemon()
        daemon.serve()
        let connection = try await NimbusConnection.connect(to: .socket(daemon.path), timeout: Self.limit, answerTimeout: Self.limit)
        #expect(connection.answerTimeout == Self.limit)
        let a = WirePath("a")
        #expect(connection.answerLimit("acquire", AcquireParams(path: a, mode: "shared", timeoutSeconds: 60)) == Self.limit + .seconds(60))
        #expect(connection.answerLimit("acquire", AcquireParams(path: a, mode: "shared", timeoutSeconds: 0)) == Self.limit)
        #expect(connection.answerLimit("acquire", AcquireParams(path: a, mode: "exclusive")) == nil)
        #expect(connection.answerLimit("download", PathAction("a", wait: nil)) == nil)
        #expect(connection.answerLimit("download", PathAction("a", wait: false)) == Self.limit)
        #expect(connection.answerLimit("status", NoParams()) == Self.limit)
        #expect(connection.answerLimit("rescan", NoParams()) == Self.limit)
    }

    @Test func limitsAreSaidAsPeopleReadThem() {
        #expect(NimbusClientError.describe(.seconds(30)) == "30 s")
        #expect(NimbusClientError.describe(.milliseconds(1500)) == "1.5 s")
        #expect(NimbusClientError.describe(.milliseconds(250)) == "250 ms")
    }

    /// A dropped fake daemon's thread ends at once, closing its sockets itself (it used to
    /// poll accept for 10 s on a descriptor the daemon had closed).
    @Test func aDroppedFakeDaemonsThreadEnds() async throws {
        var daemon: FakeDaemon? = try FakeDaemon()
        let thread = try #require(daemon?.serve())
        #expect(!thread.hasEnded)
        daemon = nil
        try await Polling.until("the serving thread to end", timeout: .seconds(5)) { thread.hasEnded }
    }
}
