import Foundation
import Glibc
import Testing
@testable import NimbusDaemon
import NimbusTestSupport

extension ControlServerTests {
    /// A folder changed in the configuration takes a restart, and the log says so once per
    /// reload: SIGHUP said it twice (the runtime and the signal handler each), the `reload`
    /// method only by the runtime's words. The pair keeps syncing its old folders.
    @Test func aFolderChangedByAReloadIsToldOnce() throws {
        let daemon = try DaemonProcess(foldersInConfig: true) { daemon in
            try daemon.writeConfig("[pair]\nlocal = \(daemon.local)\ncloud = \(daemon.cloud)\n")
        }
        try daemon.waitUntilIdle()
        let otherCloud = daemon.root + "/other-cloud"
        try FileManager.default.createDirectory(atPath: otherCloud, withIntermediateDirectories: true)
        try daemon.writeConfig("[pair]\nlocal = \(daemon.local)\ncloud = \(otherCloud)\n")
        func count(_ text: String) -> Int { daemon.log.components(separatedBy: text).count - 1 }

        daemon.send(SIGHUP)
        try Polling.wait("the reload SIGHUP asked for (log: \(daemon.log))") { count("configuration reloaded") == 1 }
        #expect(count("restart nimbusd") == 1, "\(daemon.log)")
        #expect(daemon.log.contains("pair.cloud changed in the configuration, but only a restart applies it"), "\(daemon.log)")

        let result = try daemon.client().result("reload")
        #expect(result["needsRestart"] == .array([.string("pair.cloud")]), "\(result)")
        try Polling.wait("the reload the method asked for (log: \(daemon.log))") { count("configuration reloaded") == 2 }
        #expect(count("restart nimbusd") == 2, "once for each reload: \(daemon.log)")

        try daemon.write("after-reload.txt", "x")
        try Polling.wait("after-reload.txt in the old cloud folder") { daemon.read("after-reload.txt", in: daemon.cloud) == "x" }
    }
}
