import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon

/// Placeholders in passes over a few paths only (events read in several batches): a
/// placeholder's file and the file it stands for must be looked at together, or a pass
/// concludes from half the picture.
@Suite struct PlaceholderScopeTests {
    /// The flaky "cloud files x and x.nimbus side by side" (issue 16): an event batch naming
    /// only `data.nimbus.nimbus` brought `data.nimbus` (the placeholder of `data`) into the
    /// pass without `data`, which then looked new here and was "uploaded" by removing its
    /// placeholder, and the cloud's `data` went to the versions store.
    @Test(arguments: ["data.nimbus.nimbus", "data.nimbus", "data"])
    func aCloudFileAndItsPlaceholderNameSurvivePartialPasses(_ event: String) throws {
        let pair = PlaceholderEngineTests.onDemand()
        try pair.cloud.write(rp("data"), Array("the data file\n".utf8))
        try pair.cloud.write(rp("data.nimbus"), Array("a file of the user's called data.nimbus\n".utf8))
        pair.engine.start()
        for _ in 0..<3 {
            pair.clock.advance(by: .seconds(1))
            pair.engine.sync([rp(event)])
        }
        pair.sync()
        #expect(pair.content(pair.cloud, "data") == "the data file\n")
        #expect(pair.content(pair.cloud, "data.nimbus") == "a file of the user's called data.nimbus\n")
        #expect(pair.content(pair.local, "data") == nil)
        #expect(pair.content(pair.local, "data.nimbus").flatMap { Placeholder.parse(Array($0.utf8)) }?.name == "data")
        #expect(pair.content(pair.local, "data.nimbus.nimbus").flatMap { Placeholder.parse(Array($0.utf8)) }?.name == "data.nimbus")
        #expect(try pair.engine.versions(of: rp("data")).isEmpty && pair.engine.versions(of: rp("data.nimbus")).isEmpty)
    }
}
