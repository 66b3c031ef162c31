import Synchronization
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon

/// Copies of a large plan wait in a batch for one flush before they are installed: they stay
/// in progress until then, and are reported in sync once installed (issue 15).
@Suite struct BatchStateTests {
    @Test func aBatchedUploadIsReportedInSyncOnceInstalled() throws {
        let pair = Pair { $0.batchThreshold = 2 }
        let names = ["a", "b", "c"]
        for name in names { try pair.local.write(rp(name), Array(name.utf8)) }
        let events = Mutex<[EngineEvent]>([])
        pair.engine.onEvent { event in events.withLock { $0.append(event) } }
        pair.engine.start()
        for name in names {
            let states = events.withLock { all in
                all.compactMap { event -> FileState? in
                    guard case .stateChanged(let path, let state) = event, path == rp(name) else { return nil }
                    return state
                }
            }
            #expect(pair.content(pair.cloud, name) == name)
            #expect(states.first?.isInProgress == true && states.last == .downloaded, "\(name): \(states)")
            #expect(pair.engine.entry(rp(name))?.state == .downloaded)
        }
    }

    /// Once a batch is installed, each file's new state is described from the metadata the
    /// install recorded: the local folder is not read again per file (issue 15: that was one
    /// stat per file at the end of a first sync).
    @Test func installingABatchReadsNoLocalMetadataPerFile() throws {
        #expect(try localMetadataReads(uploading: 40) == localMetadataReads(uploading: 8))
    }

    /// How many times a first sync that uploads `count` files (in one batch) asks the local
    /// folder for metadata.
    private func localMetadataReads(uploading count: Int) throws -> Int {
        let clock = ManualClock()
        let local = FaultyFileSystem(MemoryFileSystem(time: clock.timeSource, device: 1))
        let cloud = FaultyFileSystem(MemoryFileSystem(time: clock.timeSource, temporaryDirectory: RootMarkers.temporary(for: "laptop"),
                                                      device: 2))
        for index in 0..<count { try local.base.write(rp("d/f\(index)"), Array("content \(index)".utf8)) }
        var settings = EngineSettings(deviceName: "laptop")
        settings.batchThreshold = 2
        let engine = SyncEngine(local: local, cloud: cloud, store: MemoryRecordStore(), records: [:], clock: clock,
                                settings: settings, log: .silent, rootNames: ("L", "C"))
        engine.start()
        let reads = local.calls(.metadata)
        for index in 0..<count {
            #expect(engine.entry(rp("d/f\(index)"))?.state == .downloaded, "d/f\(index) is not in sync")
        }
        return reads
    }
}
