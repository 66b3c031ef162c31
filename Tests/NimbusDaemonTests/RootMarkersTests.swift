import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon

/// The identity markers (DESIGN §3) when the cloud folder is shared by several devices.
@Suite struct RootMarkersTests {
    let clock = ManualClock()

    func check(_ local: MemoryFileSystem, _ cloud: MemoryFileSystem, firstPairing: Bool = true,
               probe: () -> Void = {}) -> RootMarkers.Check {
        RootMarkers.check(local: local, cloud: cloud, firstPairing: firstPairing, localRoot: "/l", cloudRoot: "/c",
                          now: clock.wallNow, beforeCreatingCloudMarker: probe)
    }

    func filesystems() -> (MemoryFileSystem, MemoryFileSystem) {
        (MemoryFileSystem(time: clock.timeSource, device: 1),
         MemoryFileSystem(time: clock.timeSource, temporaryDirectory: RootMarkers.temporary, device: 2))
    }

    @Test func aFirstPairingMakesBothMarkersAfterProbingTheCloud() throws {
        let (local, cloud) = filesystems()
        var probed = 0
        #expect(check(local, cloud) { probed += 1 } == .ready)
        #expect(probed == 1)
        let id = try #require(try RootMarkers.read(cloud, RootMarkers.cloud, key: "id"))
        #expect(try RootMarkers.read(local, RootMarkers.local, key: "cloud") == id)
        #expect(check(local, cloud) { probed += 1 } == .ready)
        #expect(probed == 1, "the marker exists: nothing is created, nothing probed")
    }

    /// A device that paired but has not synced a file yet (empty journal) and does not see the
    /// cloud marker for a moment (a network client's stale listing): before, it made a new
    /// cloud marker with a new id over the shared one, and every other device then refused the
    /// cloud folder as another one.
    @Test func aPairedFolderNeverMakesANewCloudMarker() throws {
        let (local, cloud) = filesystems()
        #expect(check(local, cloud) == .ready)
        let id = try #require(try RootMarkers.read(cloud, RootMarkers.cloud, key: "id"))
        try cloud.removeFile(RootMarkers.cloud)

        guard case .missing(let message) = check(local, cloud, firstPairing: true) else {
            Issue.record("a missing cloud marker must halt the pair")
            return
        }
        #expect(message.contains("is paired with another cloud folder (id \(id))") && message.contains("has no Nimbus marker"),
                "\(message)")
        #expect(try cloud.metadata(of: RootMarkers.cloud) == nil, "no new marker")

        // Back (the listing caught up): the same id, the pair resumes.
        try cloud.writeFile(RootMarkers.cloud, contents: Array("nimbus-cloud 1\nid=\(id)\n".utf8), mode: 0o644)
        #expect(check(local, cloud, firstPairing: true) == .ready)
    }

    /// Two devices pairing at once: the second one's exclusive create finds the first one's
    /// marker and pairs with it instead of replacing it.
    @Test func aCloudMarkerMadeMeanwhileByAnotherDeviceIsKept() throws {
        let (local, cloud) = filesystems()
        let theirs = Array("nimbus-cloud 1\nid=theirs\n".utf8)
        // The other device's marker appears between this device's look and its create.
        let result = check(local, cloud) {
            try? cloud.writeFile(RootMarkers.cloud, contents: theirs, mode: 0o644)
        }
        #expect(result == .ready)
        #expect(try cloud.readFile(RootMarkers.cloud, limit: 100) == theirs)
        #expect(try RootMarkers.read(local, RootMarkers.local, key: "cloud") == "theirs")
    }
}
