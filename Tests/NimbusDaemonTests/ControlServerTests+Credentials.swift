import Foundation
import Testing
import NimbusTestSupport

extension ControlServerTests {
    /// Connections from another user are refused (DESIGN §7): first by the socket directory's
    /// mode, and, should that ever be loosened, by the `SO_PEERCRED` check at accept.
    @Suite struct PeerCredentials {
        static let setpriv = "/usr/bin/setpriv"
        static let python = "/usr/bin/python3"

        /// Dropping to `nobody` needs root and the two tools; otherwise these tests are reported
        /// as skipped with this reason rather than passing without checking anything.
        static var canDropPrivileges: Bool {
            getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv) && FileManager.default.isExecutableFile(atPath: python)
        }

        /// Connects as `nobody`, sends `status`, and prints what happened.
        static let script = """
        import socket, sys
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(sys.argv[1])
        except OSError as e:
            print("connect-error", e.errno); sys.exit(0)
        try:
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"status"}\\n')
        except OSError as e:
            print("send-error", e.errno)
        s.settimeout(10)
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
        except OSError as e:
            print("recv-error", e.errno)
        print("received", data.decode(errors="replace"))
        """

        static func runAsNobody(_ socketPath: String) throws -> String {
            let result = try ShellCommand.run(setpriv, ["--reuid=nobody", "--regid=nogroup", "--clear-groups", python, "-c", script, socketPath])
            guard result.status == 0 else {
                throw HarnessFailure("could not run a client as nobody (setpriv exit \(result.status)): \(result.output)\(result.error)")
            }
            return result.output + result.error
        }

        @Test(.enabled(if: canDropPrivileges, "needs root, setpriv and /usr/bin/python3 to run a client as nobody"))
        func anotherUserCannotEvenReachThePrivateDirectory() throws {
            let daemon = try DaemonProcess()
            try daemon.waitUntilIdle()
            let output = try Self.runAsNobody(daemon.socketPath)
            #expect(output.contains("connect-error 13"), "nobody reached the socket in its 0700 directory: \(output)")
            #expect(try daemon.client().result("status")["phase"] != nil)
        }

        @Test(.enabled(if: canDropPrivileges, "needs root, setpriv and /usr/bin/python3 to run a client as nobody"))
        func anotherUserIsRefusedAtAccept() throws {
            // The socket sits directly in the 0755 test folder; its file mode is then loosened
            // so that only the SO_PEERCRED check stands between nobody and the daemon.
            let daemon = try DaemonProcess(socketInRoot: true)
            try daemon.waitUntilIdle()
            try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: daemon.socketPath)
            let output = try Self.runAsNobody(daemon.socketPath)
            #expect(!output.contains("connect-error"), "the test did not reach the credential check: \(output)")
            #expect(output.contains("permission_denied") && !output.contains("\"result\""), "nobody was not refused: \(output)")
            try Polling.wait("the refusal to be logged") { daemon.log.contains("refused a control connection from uid 65534") }
            #expect(try daemon.client().result("status")["clients"]?.int == 1)
        }
    }
}
