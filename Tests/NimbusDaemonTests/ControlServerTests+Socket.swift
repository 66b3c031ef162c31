import Foundation
import NimbusProtocol
import NimbusSystem
import Testing
import NimbusTestSupport
@testable import NimbusDaemon

/// The socket file itself: private to the user, taken over after a crash, never from a live daemon.
extension ControlServerTests {
    @Test func aStaleSocketIsReplacedButALiveOneIsNot() throws {
        let first = try DaemonProcess()
        try first.waitUntilIdle()
        // A second daemon on the same socket refuses to start.
        let second = try DaemonProcess(socketPath: first.socketPath)
        try Polling.wait("the second daemon to give up") { !second.isRunning }
        #expect(second.exitStatus != 0)
        #expect(second.log.contains("already listening"), "\(second.log)")
        #expect(try first.client().result("status")["phase"] != nil)
        // After a crash the socket file stays behind; the next daemon takes it over.
        first.crash()
        #expect(FileManager.default.fileExists(atPath: first.socketPath))
        try first.start()
        try first.waitUntilIdle()
    }

    @Test func theSocketDirectoryAndSocketArePrivate() throws {
        let daemon = try DaemonProcess()
        try daemon.waitUntilIdle()
        let directory = URL(fileURLWithPath: daemon.socketPath).deletingLastPathComponent().path
        let dirMode = try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int
        let sockMode = try FileManager.default.attributesOfItem(atPath: daemon.socketPath)[.posixPermissions] as? Int
        #expect(dirMode == 0o700 && sockMode == 0o600)
        daemon.stop()
        #expect(!FileManager.default.fileExists(atPath: daemon.socketPath), "the socket is removed at exit")
    }
}
