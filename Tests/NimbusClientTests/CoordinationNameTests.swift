import Testing
@testable import NimbusClient

/// The temporary file of a coordinated write is named after its target: at most 64 bytes of
/// that name, cut between characters. Cut at 64 characters instead, a name of a few
/// characters with many combining marks each (one character can be 100 bytes) made a
/// temporary name the filesystem refuses, and the write failed.
struct CoordinationNameTests {
    @Test(arguments: [
        String(repeating: "e" + String(repeating: "\u{301}", count: 59), count: 2),  // 2 characters, 238 bytes
        String(repeating: "😀", count: 63),  // 252 bytes
        "report.pdf",
    ])
    func theTemporaryNameFitsAndStaysUTF8(target: String) {
        let name = NimbusConnection.temporaryName(for: target)
        #expect(name.utf8.count <= 255, "\(name.utf8.count) bytes")
        #expect(name.hasPrefix(".nimbus-tmp-write-"))
        let kept = name.utf8.dropFirst(".nimbus-tmp-write-".utf8.count + 37)
        #expect(target.utf8.starts(with: kept) && (kept.count == target.utf8.count || kept.count > 60),
                "the temporary keeps \(kept.count) bytes of the target's name")
    }
}
