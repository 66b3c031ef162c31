import Foundation
import NimbusTestTraits
import Testing

/// A style switch blocked by a taken name, through the real nimbusd (DESIGN §5): the pair
/// ran in the suffix style (`a.txt.nimbus`), the user wrote `a.txt` while it was stopped, and
/// it starts again with real names. The engine tests (BlockedConversionEngineTests) cover
/// the other orders of events.
@Suite(.serialized, .onAThreadOfItsOwn(timeLimit: .minutes(3)), .enabled(if: RealNameSupport.skipReason == nil, Comment(rawValue: RealNameSupport.skipReason ?? "")))
struct RealNameBlockedSwitchTests {
    @Test("suffix → real names with a.txt written meanwhile: the user's a.txt is the new version, the placeholder's text never reaches the cloud")
    func theUsersFileWinsAndThePlaceholderGoes() async throws {
        let cloudBytes = RealNamePlaceholderDaemonTests.random(5000)
        let s = try PlaceholderSandbox("blockedSwitch", base: RealNameSupport.base)
        defer { s.finish() }
        let d = s.daemon
        d.style = "suffix"
        try PlaceholderFiles.write(d.cloud + "/a.txt", cloudBytes)
        try PlaceholderFiles.write(d.cloud + "/b.txt", Array("b\n".utf8))
        try await d.start()
        try await d.eventually("suffix placeholders") {
            ["a.txt", "b.txt"].first { !PlaceholderFiles.exists(d.local + "/" + $0 + ".nimbus") }
        }
        try await d.stop()
        try PlaceholderFiles.write(d.local + "/a.txt", Array("mine\n".utf8))
        d.style = "real-name"
        try await d.start()
        try await d.eventually("a.txt uploaded, its placeholder gone") {
            if (try? PlaceholderFiles.read(d.cloud + "/a.txt")) != Array("mine\n".utf8) { return "cloud a.txt is not the user's" }
            if PlaceholderFiles.exists(d.local + "/a.txt.nimbus") { return "a.txt.nimbus is still there" }
            return RealNamePlaceholderDaemonTests.notDownloaded(d, "b.txt")
        }
        try await d.settle()
        #expect(!PlaceholderFiles.exists(d.cloud + "/a.txt.nimbus"), "the placeholder never reaches the cloud")
        #expect(try PlaceholderFiles.read(d.local + "/a.txt") == Array("mine\n".utf8))
        #expect(try await d.ctlJSON(["info", "a.txt"])["state"] as? String == "downloaded")
        #expect(try await d.ctlJSON(["info", "b.txt"])["state"] as? String == "notDownloaded")
        let versions = RealNamePlaceholderDaemonTests.run("ls -A '\(d.cloud)/.nimbus/versions'")
        #expect(versions.output.contains("a.txt"), "the cloud's a.txt is kept in the versions store: \(versions.output)")
    }

    @Test("real names → suffix with a.txt.nimbus written meanwhile: that file stays the user's and is synced, a.txt is downloaded")
    func theUsersSuffixNamedFileStaysAndXIsDownloaded() async throws {
        let cloudBytes = RealNamePlaceholderDaemonTests.random(5000)
        let s = try await RealNamePlaceholderDaemonTests.start("blockedSwitchBack", files: ["a.txt": cloudBytes])
        defer { s.finish() }
        let d = s.daemon
        try await d.eventually("a real-name placeholder") { RealNamePlaceholderDaemonTests.notDownloaded(d, "a.txt") }
        try await d.stop()
        try PlaceholderFiles.write(d.local + "/a.txt.nimbus", Array("mine\n".utf8))
        d.style = "suffix"
        try await d.start()
        try await d.eventually("a.txt downloaded, a.txt.nimbus uploaded") {
            if (try? PlaceholderFiles.read(d.local + "/a.txt")) != cloudBytes { return "local a.txt is not the cloud's" }
            if (try? PlaceholderFiles.read(d.cloud + "/a.txt.nimbus")) != Array("mine\n".utf8) { return "cloud a.txt.nimbus is not the user's" }
            return nil
        }
        try await d.settle()
        #expect(try PlaceholderFiles.read(d.local + "/a.txt.nimbus") == Array("mine\n".utf8))
        #expect(try PlaceholderFiles.read(d.cloud + "/a.txt") == cloudBytes)
        #expect(try await d.ctlJSON(["info", "a.txt"])["state"] as? String == "downloaded")
        let names = RealNamePlaceholderDaemonTests.run("ls -A '\(d.local)'").output
        #expect(!names.contains("conflict"), "nothing was moved to a conflict name: \(names)")
    }
}
