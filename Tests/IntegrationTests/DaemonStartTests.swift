import Foundation
import Glibc
import NimbusTestTraits
import Testing
import NimbusTestSupport

/// The daemon's start (issue #13): folders that can never work end it before READY with a
/// clear message and a sysexits code; a second daemon on a served local folder refuses to
/// start and names the first; a crashed daemon leaves no lock behind.
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(2)))
struct DaemonStartTests {
    /// Runs nimbusd with `arguments` until it exits (at most 20 s, else it is killed and the
    /// test fails); its exit status and what it logged.
    func runDaemon(_ arguments: [String], sandbox: String, environment: [String: String]) async throws -> (status: Int32, log: String) {
        let process = try BackgroundProcess(NimbusdProcess.nimbusd, arguments, environment: environment, scratch: sandbox)
        defer { process.stop() }
        let exited = try await process.exited(within: .seconds(20))
        let log = process.output
        guard exited else { throw HarnessFailure("nimbusd kept running (it should have exited):\n\(log)") }
        return (process.status, log)
    }

    func sandbox() throws -> (root: String, environment: [String: String]) {
        let root = try TemporaryDirectory.make("nimbus-ctl")
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = root
        environment["XDG_CONFIG_HOME"] = root + "/config"
        environment["XDG_RUNTIME_DIR"] = root
        environment.removeValue(forKey: "NOTIFY_SOCKET")
        environment.removeValue(forKey: "DBUS_SESSION_BUS_ADDRESS")  // no notifications on the tester's desktop
        return (root, environment)
    }

    func arguments(_ root: String, local: String, cloud: String, name: String = "d") -> [String] {
        ["--local", local, "--cloud", cloud, "--state-dir", root + "/state-\(name)", "--socket", root + "/\(name).sock",
         "--device-name", "test"]
    }

    @Test func aLocalFolderThatIsAFileIsAConfigurationError() async throws {
        let (root, environment) = try sandbox()
        defer { try? FileManager.default.removeItem(atPath: root) }
        FileManager.default.createFile(atPath: root + "/notes.txt", contents: Data("x".utf8))
        try FileManager.default.createDirectory(atPath: root + "/cloud", withIntermediateDirectories: true)
        let (status, log) = try await runDaemon(arguments(root, local: root + "/notes.txt", cloud: root + "/cloud"),
                                                sandbox: root, environment: environment)
        #expect(status == 78, "EX_CONFIG: \(log)")
        #expect(log.contains("the local folder \(root)/notes.txt is a file, not a folder"), "\(log)")
        #expect(!log.contains("ready"), "\(log)")
        let cloudFile = try await runDaemon(arguments(root, local: root + "/local", cloud: root + "/notes.txt", name: "e"),
                                            sandbox: root, environment: environment)
        #expect(cloudFile.status == 78, "\(cloudFile.log)")
        #expect(cloudFile.log.contains("the cloud folder \(root)/notes.txt is a file, not a folder"), "\(cloudFile.log)")
    }

    @Test func aCloudFolderThatNeverExistedEndsTheFirstPairing() async throws {
        let (root, environment) = try sandbox()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (status, log) = try await runDaemon(arguments(root, local: root + "/local", cloud: root + "/mnt/typo"),
                                                sandbox: root, environment: environment)
        #expect(status == 66, "EX_NOINPUT: \(log)")
        #expect(log.contains("the cloud folder \(root)/mnt/typo does not exist, and this pair never synced"), "\(log)")
        #expect(!FileManager.default.fileExists(atPath: root + "/mnt/typo"), "a configured cloud folder is never created")

        // A pair that synced before (its local marker says so), even with no files yet, waits
        // for a missing cloud folder (an unmounted share) instead.
        try FileManager.default.createDirectory(atPath: root + "/paired", withIntermediateDirectories: true)
        try "nimbus-root 1\ncloud=1234\n".write(toFile: root + "/paired/.nimbus-root", atomically: false, encoding: .utf8)
        let process = try BackgroundProcess(NimbusdProcess.nimbusd, arguments(root, local: root + "/paired", cloud: root + "/mnt/share", name: "waits"),
                                            environment: environment, scratch: root)
        defer { process.stop() }
        // Generous, as for any start (CtlDaemon.start): 15 s passed in a loaded full run before
        // the daemon listened; the wait ends as soon as it answers.
        try await Polling.eventually("the daemon to answer while it waits for the cloud folder", timeout: .seconds(90)) {
            guard process.isRunning else { return "exited: \(process.exitDescription)" }
            let result = try await Polling.blocking {
                try CtlHarness.run(NimbusdProcess.nimbusctl, ["--socket", root + "/waits.sock", "--json", "status"],
                                   environment: environment, currentDirectory: root, scratch: root)
            }
            return (try? result.json()["phase"] as? String) == "halted" ? nil : "\(result)"
        }
    }

    /// What the help says about folders is what the daemon does: a configured local folder is
    /// created with its parents on the first pairing (a cloud folder never is: see above).
    @Test func theHelpSaysWhichFoldersAreCreatedAndItIsSo() async throws {
        let (root, environment) = try sandbox()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let help = try await runDaemon(["--help"], sandbox: root, environment: environment)
        #expect(help.status == 0)
        for text in ["A configured local folder is created (with its parents) when the pair never", "a configured cloud folder is never created",
                     "66 the cloud folder does not exist", "73 the state directory, journal, local folder or control",
                     "75 another nimbusd syncs this local folder"] {
            #expect(help.log.contains(text), "\(text)\n\(help.log)")
        }
        try FileManager.default.createDirectory(atPath: root + "/cloud", withIntermediateDirectories: true)
        let process = try BackgroundProcess(NimbusdProcess.nimbusd, arguments(root, local: root + "/new/deep/local", cloud: root + "/cloud"),
                                            environment: environment, scratch: root)
        defer { process.stop() }
        try await Polling.eventually("the local folder to be created") {
            FileManager.default.fileExists(atPath: root + "/new/deep/local/.nimbus-root") ? nil : "not yet (\(process.exitDescription))"
        }
    }

    /// Folders nested through a symlink (or a bind mount) are nested all the same: a local
    /// folder inside its cloud folder uploads itself into itself, one level deeper at each
    /// pass (seen: cloud/sub/sub/sub/… until stopped). The paths as written do not say so.
    @Test func foldersNestedThroughASymlinkAreAConfigurationError() async throws {
        let (root, environment) = try sandbox()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let files = FileManager.default
        for folder in ["cloud/sub", "local/inner"] { try files.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true) }
        try files.createSymbolicLink(atPath: root + "/to-cloud", withDestinationPath: "cloud")
        try files.createSymbolicLink(atPath: root + "/to-local", withDestinationPath: root + "/local")
        let cases: [(local: String, cloud: String, state: String?, message: String)] = [
            (root + "/to-cloud/sub", root + "/cloud", nil,
             "the local folder \(root)/to-cloud/sub is inside the cloud folder \(root)/cloud"),
            (root + "/to-cloud/new/deep", root + "/cloud", nil,
             "the local folder \(root)/to-cloud/new/deep is inside the cloud folder \(root)/cloud"),
            (root + "/local", root + "/to-local/inner", nil,
             "the cloud folder \(root)/to-local/inner is inside the local folder \(root)/local"),
            (root + "/to-cloud", root + "/cloud", nil,
             "the local folder \(root)/to-cloud and the cloud folder \(root)/cloud are the same folder"),
            (root + "/local", root + "/cloud", root + "/to-local/state",
             "the state directory \(root)/to-local/state is inside the local folder \(root)/local"),
        ]
        for (index, nested) in cases.enumerated() {
            var arguments = arguments(root, local: nested.local, cloud: nested.cloud, name: "n\(index)")
            if let state = nested.state, let flag = arguments.firstIndex(of: "--state-dir") { arguments[flag + 1] = state }
            let (status, log) = try await runDaemon(arguments, sandbox: root, environment: environment)
            #expect(status == 78, "EX_CONFIG: \(log)")
            #expect(log.contains(nested.message) && log.contains("through a symlink or a mount"), "\(nested.message)\n\(log)")
            #expect(!log.contains("ready"), "\(log)")
            let made = try files.subpathsOfDirectory(atPath: root + "/cloud").sorted() + files.subpathsOfDirectory(atPath: root + "/local").sorted()
            #expect(made == ["sub", "inner"], "nimbusd wrote into the folders: \(made)")
        }
    }

    @Test func aSecondDaemonOnAServedLocalFolderRefusesAndNamesTheFirst() async throws {
        try await CtlDaemon.with { first in
            let other = first.root + "/other-cloud"
            try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
            let (status, log) = try await runDaemon(arguments(first.root, local: first.local, cloud: other, name: "second"),
                                                    sandbox: first.root, environment: first.environment)
            #expect(status == 75, "EX_TEMPFAIL: \(log)")
            #expect(log.contains("the local folder \(first.local) is already synced by another nimbusd (pid "), "\(log)")
            #expect(log.contains("socket \(first.socket))"), "\(log)")
            #expect(!FileManager.default.fileExists(atPath: first.root + "/second.sock"), "it never served")

            // The lock dies with its daemon, however it ends.
            await first.terminate(signal: SIGKILL)
            let process = try BackgroundProcess(NimbusdProcess.nimbusd, arguments(first.root, local: first.local, cloud: other, name: "third"),
                                                environment: first.environment, scratch: first.root)
            defer { process.stop() }
            // The local marker names the first cloud folder, so this pair halts (a problem of
            // its own), but the daemon started: its socket answers.
            try await Polling.eventually("the third daemon to answer") {
                guard process.isRunning else { return "exited: \(process.exitDescription)" }
                let result = try await Polling.blocking {
                    try CtlHarness.run(NimbusdProcess.nimbusctl, ["--socket", first.root + "/third.sock", "--json", "status"],
                                       environment: first.environment, currentDirectory: first.root, scratch: first.root)
                }
                return result.stdout.contains("\"phase\"") ? nil : "\(result)"
            }
        }
    }
}
