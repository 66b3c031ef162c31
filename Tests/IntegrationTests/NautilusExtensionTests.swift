import Foundation
import Glibc
import NimbusSystem
import Testing

/// The Nautilus extension's logic (Packaging/nautilus) is tested in Python, against a stand-in
/// of the daemon's socket (Packaging/nautilus/tests); this runs those tests so that `swift test`
/// covers them too. They need only python3 and its standard library, not Nautilus.
@Suite struct NautilusExtensionTests {
    static let extensionDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Packaging/nautilus").path
    /// Debian's python3 (the one Nautilus embeds) when present, else any python3 on the PATH.
    static let python: String? = (["/usr/bin/python3"] + (ProcessInfo.processInfo.environment["PATH"] ?? "")
        .split(separator: ":").map { "\($0)/python3" })
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test(.enabled(if: python != nil, "needs python3 to run the Nautilus extension's unit tests (Packaging/nautilus/tests)"))
    func pythonUnitTests() throws {
        let sandbox = try SyncSandbox("nautilus-unittest")
        defer { sandbox.finish() }
        let log = sandbox.root + "/unittest.log"
        // Through `sh` with the output in a file: the child gets no descriptor of ours (ChildProcess).
        let script = "cd \(NetworkCloudServers.quoted(Self.extensionDirectory)) && exec \(NetworkCloudServers.quoted(Self.python!)) -B -m unittest discover -v -s tests >\(NetworkCloudServers.quoted(log)) 2>&1"
        let status = try ChildProcess.wait(try ChildProcess.spawn(SyncHarness.tool("sh"), arguments: ["-c", script]))
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? "(no output)"
        #expect(status == 0, "python3 -m unittest in Packaging/nautilus failed (status \(status)):\n\(output)")
        // A run that found no tests would also exit 0.
        let ran = output.split(separator: "\n").first { $0.hasPrefix("Ran ") } ?? ""
        #expect(Int(ran.split(separator: " ").dropFirst().first ?? "") ?? 0 >= 20, "too few tests ran: \(ran)\n\(output)")
    }
}
