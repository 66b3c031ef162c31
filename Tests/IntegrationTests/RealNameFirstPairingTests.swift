import Foundation
import Glibc
import NimbusTestTraits
import Testing

/// A first pairing creates the local folder, so the style cannot be tried on the folder
/// itself: it is tried in the nearest folder that exists, where the new one is made. Before,
/// a new user's first run always fell back to suffix placeholders.
@Suite(.serialized, .onAThreadOfItsOwn(timeLimit: .minutes(2)),
       .enabled(if: RealNameSupport.skipReason == nil, Comment(rawValue: RealNameSupport.skipReason ?? "")))
struct RealNameFirstPairingTests {
    @Test("style = auto on a first pairing whose local folder does not exist yet chooses real-name placeholders")
    func autoChoosesRealNamesForAFolderStillToBeMade() async throws {
        let s = try RealName.sandbox("realNameFirstPairing")
        defer { s.finish() }
        let d = s.daemon
        d.config["placeholders"]?["style"] = "auto"
        try PlaceholderFiles.write(d.cloud + "/report.pdf", Array("the report".utf8))
        try FileManager.default.removeItem(atPath: d.local)
        try await d.start()
        try await d.eventually("report.pdf as a real-name placeholder") { RealName.isNotDownloaded(d, "report.pdf") }
        let read = RealName.shell(#"cat "$1""#, [d.local + "/report.pdf"])
        #expect(read.status == 0 && read.output == "the report", "cat of the placeholder: \(read)")
        try await d.stop()
    }
}
