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

    @Test func reloadSaysWhatChangedAndKeepsTheOldSettingsOnError() throws {
        let daemon = try DaemonProcess()
        try daemon.waitUntilIdle()
        let client = try daemon.client()
        let config = daemon.root + "/config/nimbus/default.conf"
        try daemon.write("default.conf", "[safety]\nmax-delete-percent = 40\n[pair]\nmode = on-demand\n[cache]\ncache-limit = 1G\n"
                         + "[placeholders]\nfill-timeout = 1m\n[watch]\ncloud = poll\n", in: daemon.root + "/config/nimbus")
        let result = try client.result("reload")
        // What the running pair takes over is not reported as needing a restart; what only the
        // start reads is.
        #expect(result["changed"] == .array(["pair.mode", "placeholders.fill-timeout", "cache.cache-limit",
                                             "safety.max-delete-percent"].map { .string($0) }), "\(result)")
        #expect(result["needsRestart"] == .array([.string("watch.cloud")]), "\(result)")
        try Data("[safety]\nmax-delete-percent = lots\n".utf8).write(to: URL(fileURLWithPath: config))
        let failed = try client.call("reload")
        #expect(failed.errorName == "failed", "\(failed)")
        #expect(failed["error"]?["data"]?["reason"]?.string?.contains("default.conf:2") == true, "\(failed)")
        #expect(try client.result("status")["phase"] != nil)
    }

    /// Each config key is either applied by a reload or reported as needing a restart: a new
    /// key must be put in one of the two.
    @Test func everySettingIsEitherLiveOrRestartOnly() {
        let keys = ConfigSetting.all.map { "\($0.section).\($0.key)" }
        #expect(ConfigurationReloader.liveSettings.isDisjoint(with: ConfigurationReloader.restartSettings))
        #expect(ConfigurationReloader.liveSettings.union(ConfigurationReloader.restartSettings) == Set(keys))
    }
}
