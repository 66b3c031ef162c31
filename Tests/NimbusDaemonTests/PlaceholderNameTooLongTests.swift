import Testing
import NimbusCore
import NimbusSimulation
import NimbusVocabulary
@testable import NimbusDaemon

/// A cloud file whose name leaves no room for ".nimbus" (250 bytes: the placeholder's would
/// be 257) in on-demand mode with suffix placeholders. Before, it was downloaded without a
/// word, whatever its size, in the mode the user chose not to download; now it is an error
/// that status counts, `ls --state error` lists and `stat` shows, naming the path and the two
/// ways out (download it by name, or rename it), until one of them is taken.
@Suite struct PlaceholderNameTooLongTests {
    static let long = String(repeating: "n", count: 250)

    static func onDemandPair(with file: String) throws -> Pair {
        let pair = Pair { $0.onDemand = true }
        try pair.cloud.write(rp(file), Array("the content".utf8))
        try pair.cloud.write(rp("short.txt"), Array("short".utf8))
        pair.engine.start()
        return pair
    }

    func expectAnErrorNamingThePath(_ pair: Pair, _ path: String) throws {
        let entry = try #require(pair.engine.entry(rp(path)), "nothing tells the user about \(path)")
        guard case .error(let message) = entry.state else {
            Issue.record("\(path) is \(entry.state.name), not an error")
            return
        }
        #expect(message.contains(path) && message.contains("nimbusctl download"), "\(message)")
        #expect(entry.size == 11, "listed with the cloud file's size")
        #expect(pair.engine.errorCount == 1)
        #expect(pair.engine.status.lastError == message)
        #expect(try pair.engine.listEntries(under: rp(path).parent, recursive: true).filter { $0.state.name == "error" }.map(\.path) == [rp(path)])
    }

    @Test func aNewCloudFileIsAnErrorAndNotDownloaded() throws {
        let pair = try Self.onDemandPair(with: "d/" + Self.long)
        #expect(pair.content(pair.local, "d/" + Self.long) == nil, "downloaded in on-demand mode")
        #expect(pair.content(pair.local, "short.txt.nimbus") != nil, "the other file is a placeholder as usual")
        try expectAnErrorNamingThePath(pair, "d/" + Self.long)
        // Passes (a retry, a rescan) find the same error: nothing downloaded, nothing else made.
        pair.clock.advance(by: .seconds(600))
        pair.sync()
        #expect(pair.content(pair.local, "d/" + Self.long) == nil)
        #expect(pair.local.snapshot().keys.filter { $0.parent == rp("d") } == [], "something was made for it in d")
        try expectAnErrorNamingThePath(pair, "d/" + Self.long)
    }

    @Test func downloadingItByNameEndsTheError() throws {
        let pair = try Self.onDemandPair(with: Self.long)
        // Later than the cloud file's mtime, so that the download's record is not ambiguous
        // (which the next pass would check by content, a write of the journal).
        pair.clock.advance(by: .seconds(5))
        let entry = try pair.engine.download(rp(Self.long), .explicit)
        #expect(entry?.state == .downloaded)
        #expect(pair.content(pair.local, Self.long) == "the content")
        #expect(pair.engine.errorCount == 0)
        let writes = pair.store.writes
        pair.sync()
        #expect(pair.store.writes == writes, "a pass after the download found something to do")
        #expect(pair.engine.entry(rp(Self.long))?.state == .downloaded)
    }

    @Test func renamingItInTheCloudEndsTheError() throws {
        let pair = try Self.onDemandPair(with: Self.long)
        try pair.cloud.rename(rp(Self.long), to: rp("shorter"), replacing: false)
        pair.sync()
        #expect(pair.content(pair.local, "shorter.nimbus") != nil)
        #expect(pair.engine.errorCount == 0)
        #expect(pair.engine.entry(rp(Self.long)) == nil)
    }

    /// Renamed in the cloud from a name with a placeholder to one without room for it: the
    /// old placeholder goes (it stood for a name that is gone); the new name is the error.
    @Test func aPlaceholderRenamedInTheCloudToSuchANameGoesAndTheNewNameIsTheError() throws {
        let pair = try Self.onDemandPair(with: "a.txt")
        #expect(pair.content(pair.local, "a.txt.nimbus") != nil)
        try pair.cloud.rename(rp("a.txt"), to: rp(Self.long), replacing: false)
        pair.sync()
        pair.sync()
        #expect(pair.content(pair.local, "a.txt.nimbus") == nil, "the placeholder of a name gone from the cloud stayed")
        #expect(pair.content(pair.cloud, Self.long) == "the content", "the cloud file must stay")
        try expectAnErrorNamingThePath(pair, Self.long)
    }
}
