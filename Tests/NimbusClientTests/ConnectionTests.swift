import Foundation
@testable import NimbusClient
import NimbusProtocol
import NimbusTestTraits
import Synchronization
import Testing

/// The client against a scripted daemon: ids matched, notifications streamed, errors typed.
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(1)))
struct ConnectionTests {
    static let status = StatusResult(phase: "idle", reason: nil, paused: false, tracked: 7, heldDeletes: 0, conflicts: 1,
                                     bytesCopied: 10, filesCopied: 1, lastError: nil, instance: "default",
                                     localRoot: "/home/ann/Nimbus", cloudRoot: "/mnt/cloud", deviceName: "laptop",
                                     daemonVersion: "0.1.0", startedAtNs: 0, clients: 1)

    @Test func helloThenATypedCall() async throws {
        let daemon = try FakeDaemon()
        daemon.serve { exchange in
            if exchange.method == "status" { exchange.result(Self.status) }
        }
        let connection = try await NimbusConnection.connect(to: .socket(daemon.path))
        #expect(connection.daemon == FakeDaemon.hello)
        #expect(try await connection.status() == Self.status)
        connection.close()
    }

    @Test func answersAreMatchedByIdNotByOrder() async throws {
        let daemon = try FakeDaemon()
        let held = Mutex<FakeDaemon.Exchange?>(nil)
        let (statusArrived, arrival) = AsyncStream.makeStream(of: Void.self)
        daemon.serve { exchange in
            switch exchange.method {
            case "status":
                held.withLock { $0 = exchange }  // answered after the next request
                arrival.yield()
            case "conflicts":
                exchange.result(ConflictsResult(conflicts: [ConflictInfo(path: WirePath("a"), conflictCopy: WirePath("a (c)"))]))
                held.withLock { $0 }?.result(Self.status)
            default:
                break
            }
        }
        let connection = try await NimbusConnection.connect(to: .socket(daemon.path))
        async let status = connection.status()
        // Make sure status is on the wire first, so the answers really come back reversed:
        // told by the daemon, not polled against a clock (the suite's limit bounds the wait).
        for await _ in statusArrived { break }
        let conflicts = try await connection.conflicts()
        #expect(conflicts.map(\.path) == ["a"])
        #expect(try await status == Self.status)
    }

    @Test func daemonErrorsKeepNameReasonAndSuggestion() async throws {
        let daemon = try FakeDaemon()
        daemon.serve { exchange in
            exchange.error(RPCError(.notSupported, "cannot download a.pdf", reason: "placeholders are not supported yet",
                                    suggestion: "wait for a newer nimbusd"))
        }
        let connection = try await NimbusConnection.connect(to: .socket(daemon.path))
        do {
            try await connection.download("a.pdf")
            Issue.record("download succeeded")
        } catch let error as NimbusClientError {
            #expect(error.name == "not_supported")
            #expect(error.code == -32005)
            #expect(error.message == "cannot download a.pdf")
            #expect(error.reason == "placeholders are not supported yet")
            #expect(error.suggestion == "wait for a newer nimbusd")
            #expect(!error.isUnreachable)
            #expect(Failure(error).exitCode == 1)
        }
    }

    @Test func watchStreamsNotificationsInOrder() async throws {
        let daemon = try FakeDaemon()
        daemon.serve { exchange in
            guard exchange.method == "watch" else { return }
            exchange.result(WatchResult(watching: true))
            exchange.send(#"{"jsonrpc":"2.0","method":"event","params":{"type":"state","path":"a","state":"downloaded","time":"x","timeNs":1}}"#)
            exchange.send(#"{"jsonrpc":"2.0","method":"progress","params":{"path":"b","direction":"download","fraction":0.5,"time":"x","timeNs":2}}"#)
            exchange.send(#"{"jsonrpc":"2.0","method":"somethingNew","params":{}}"#)
            exchange.hangUp()
        }
        let connection = try await NimbusConnection.connect(to: .socket(daemon.path))
        var received: [DaemonNotification] = []
        for await notification in try await connection.watch() { received.append(notification) }
        #expect(received.count == 3)
        guard received.count == 3 else { return }
        if case .event(let event) = received[0].payload {
            #expect(event.path == "a" && event.state == "downloaded")
        } else {
            Issue.record("not an event: \(received[0])")
        }
        if case .progress(let progress) = received[1].payload {
            #expect(progress.fraction == 0.5)
        } else {
            Issue.record("not progress: \(received[1])")
        }
        #expect(received[2].payload == .unknown)
        #expect(received[2].message["method"] == .string("somethingNew"))
    }

    @Test func listingsAreReadToTheLastPage() async throws {
        let daemon = try FakeDaemon()
        daemon.serve { exchange in
            let page = exchange.params["cursor"] == nil
            let entry = Entry(path: WirePath(page ? "a" : "b"), kind: "file", size: 1, mtimeNs: 0, state: .downloaded,
                              conflictCopy: nil, residency: "auto")
            exchange.result(ListResult(entries: [entry], nextCursor: page ? "next" : nil))
        }
        let connection = try await NimbusConnection.connect(to: .socket(daemon.path))
        #expect(try await connection.list(recursive: true).map(\.path) == ["a", "b"])
    }

    @Test func aDaemonThatHangsUpFailsTheWaitingCall() async throws {
        let daemon = try FakeDaemon()
        daemon.serve { exchange in exchange.hangUp() }
        let connection = try await NimbusConnection.connect(to: .socket(daemon.path))
        await #expect(throws: NimbusClientError.connectionClosed(socketPath: daemon.path)) { try await connection.status() }
        // And every later call too, at once.
        await #expect(throws: NimbusClientError.connectionClosed(socketPath: daemon.path)) { try await connection.pause() }
    }

    @Test func anOversizeLineFromTheDaemonEndsTheConnection() async throws {
        let daemon = try FakeDaemon()
        daemon.serve { exchange in
            exchange.send(#"{"jsonrpc":"2.0","id":\#(exchange.id.jsonText),"result":{"x":""# + String(repeating: "x", count: 1 << 20) + "\"}}")
        }
        let connection = try await NimbusConnection.connect(to: .socket(daemon.path))
        do {
            _ = try await connection.status()
            Issue.record("an oversize line was accepted")
        } catch let error as NimbusClientError {
            #expect(error.name == "bad_response")
            #expect(error.reason.contains("1 MiB"))
        }
    }

    @Test func noDaemonSaysHowToStartOne() async throws {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-none-\(UUID().uuidString).sock").path
        do {
            _ = try await NimbusConnection.connect(to: .socket(missing))
            Issue.record("connected to nothing")
        } catch let error as NimbusClientError {
            guard case .notRunning = error else { return #expect(Bool(false), "\(error)") }
            #expect(error.isUnreachable)
            #expect(error.reason.contains(missing))
            #expect(error.suggestion.contains("systemctl --user start nimbusd"))
            #expect(error.suggestion.contains("nimbusd --socket \(missing)"))
        }
        let instance = NimbusClientError.notRunning(socketPath: "/x", endpoint: .instance("work"), cause: "")
        #expect(instance.suggestion == "start it with 'systemctl --user start nimbusd@work', or run 'nimbusd --instance work' in a terminal")
        #expect(NimbusClientError.notRunning(socketPath: "/x", endpoint: .default, cause: "").suggestion
                == "start it with 'systemctl --user start nimbusd', or run 'nimbusd' in a terminal")
    }

    @Test func instancesAreLookedForWhereTheDaemonListens() throws {
        let paths = try NimbusEndpoint.instance("work").candidateSocketPaths(environment: ["XDG_RUNTIME_DIR": "/run/user/7"], uid: 7)
        #expect(paths == ["/run/user/7/nimbus/work.sock", "/run/nimbus/work.sock"])
        #expect(throws: NimbusClientError.self) { try NimbusEndpoint.instance("../x").candidateSocketPaths(environment: [:], uid: 7) }
    }
}
