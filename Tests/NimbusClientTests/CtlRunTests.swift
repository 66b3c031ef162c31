import Foundation
@testable import NimbusClient
import NimbusProtocol
import NimbusTestTraits
import Testing

/// Whole nimbusctl command lines, in process, against the scripted daemon.
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(1)))
struct CtlRunTests {
    func run(_ arguments: [String], _ respond: @escaping @Sendable (FakeDaemon.Exchange) -> Void)
        async throws -> (status: Int32, console: RecordingConsole) {
        let daemon = try FakeDaemon()
        daemon.serve(.answering, respond)
        let console = RecordingConsole()
        let status = await NimbusCtl.run(arguments: ["--socket", daemon.path] + arguments,
                                         environment: ["NO_COLOR": "1"], console: console.console)
        return (status, console)
    }

    @Test func jsonPrintsTheResultAsTheDaemonSentIt() async throws {
        let (status, console) = try await run(["--json", "status"]) { exchange in
            // A field this client does not know must survive.
            exchange.send(#"{"jsonrpc":"2.0","id":\#(exchange.id.jsonText),"result":"#
                + (try! JSONValue(encoding: ConnectionTests.status)).jsonText.dropLast() + #","fromTheFuture":true}}"#)
        }
        #expect(status == 1, "the status has a conflict: something needs the user, with --json too")
        let output = try console.outputJSON()
        #expect(output["tracked"] == .integer(7))
        #expect(output["fromTheFuture"] == .bool(true))
        #expect(console.output.hasSuffix("}\n") && console.output.filter { $0 == "\n" }.count == 1)
    }

    @Test func humanStatus() async throws {
        let (status, console) = try await run(["status"]) { $0.result(ConnectionTests.status) }
        #expect(status == 1, "a conflict needs the user")
        #expect(console.output.hasPrefix("● Needs you: 1 conflict; see 'nimbusctl --socket "), "\(console.output)")
        #expect(console.output.contains("1 file changed on both sides"))

        #expect(!console.output.contains("\u{1B}"), "NO_COLOR=1")
    }

    @Test func statusAllInSyncExitsZero() async throws {
        let calm = { var calm = ConnectionTests.status; calm.conflicts = 0; return calm }()
        let (status, console) = try await run(["status"]) { $0.result(calm) }
        #expect(status == 0)
        #expect(console.output.hasPrefix("● Up to date\n"), "\(console.output)")
    }

    @Test func pathsAreSentRelativeToTheLocalRoot() async throws {
        let (status, console) = try await run(["info", "/home/ann/Nimbus/Docs/a.txt"]) { exchange in
            let path = exchange.params["path"]?.stringValue ?? "?"
            exchange.result(Entry(path: WirePath(path), kind: "file", size: 3, mtimeNs: 0, state: .downloaded,
                                  conflictCopy: nil, residency: "auto"))
        }
        #expect(status == 0)
        #expect(console.output.contains("Path       Docs/a.txt"))
        #expect(console.output.contains("On disk    /home/ann/Nimbus/Docs/a.txt"))
    }

    @Test func aPathOutsideTheSyncedFolderIsAUsageError() async throws {
        let (status, console) = try await run(["info", "/etc/passwd"]) { exchange in
            Issue.record("the daemon was asked: \(exchange.request)")
        }
        #expect(status == 64)
        #expect(console.error.contains("error: '/etc/passwd' is outside the synced folder"))
    }

    @Test func severalPathsReportEachFailureAndExitOne() async throws {
        let (status, console) = try await run(["pin", "a", "b"]) { exchange in
            if exchange.params["path"] == .string("a") {
                exchange.result(JSONValue.object(["pinned": .bool(true)]))
            } else {
                exchange.error(RPCError(.notFound, "b does not exist", reason: "no such file in the local folder",
                                        suggestion: "check the name with 'nimbusctl ls'"))
            }
        }
        #expect(status == 1)
        #expect(console.output.contains("Pinned a."))
        #expect(console.error.contains("error: b: b does not exist"))
        #expect(console.error.contains("  reason: no such file in the local folder"))
        #expect(console.error.contains("  suggestion: check the name with 'nimbusctl ls'"))
    }

    @Test func jsonErrorsCarryTheDaemonsFields() async throws {
        let (status, console) = try await run(["--json", "evict", "a"]) { exchange in
            exchange.error(RPCError(.notSupported, "cannot evict a", reason: "placeholders are not supported yet",
                                    suggestion: "wait for a newer nimbusd"))
        }
        #expect(status == 1)
        let error = try #require(try console.outputJSON()["error"])
        #expect(error["name"] == .string("not_supported"))
        #expect(error["code"] == .integer(-32005))
        #expect(error["path"] == .string("a"))
        #expect(error["suggestion"] == .string("wait for a newer nimbusd"))
    }

    @Test func noDaemonExits69WithTheHint() async {
        let console = RecordingConsole()
        let status = await NimbusCtl.run(arguments: ["--socket", "/nonexistent/nimbus.sock", "status"], environment: [:],
                                         console: console.console)
        #expect(status == 69)
        #expect(console.error.contains("error: the Nimbus daemon is not running"))
        #expect(console.error.contains("systemctl --user start nimbusd"))
        #expect(console.error.contains("or run nimbusd --socket /nonexistent/nimbus.sock;"), "\(console.error)")
        let spaced = RecordingConsole()
        _ = await NimbusCtl.run(arguments: ["--socket", "/no such/dir/d.sock", "status"], environment: [:], console: spaced.console)
        #expect(spaced.error.contains("or run nimbusd --socket '/no such/dir/d.sock';"), "a pasted hint is shell-quoted: \(spaced.error)")
    }
}
