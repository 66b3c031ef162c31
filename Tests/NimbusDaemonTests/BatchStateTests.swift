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

    /// syncfs(2) flushes a whole filesystem: folders on one are flushed once before a batch
    /// going both ways is installed and once after, folders on two filesystems each (issue 15).
    @Test(arguments: [true, false])
    func aBatchFlushesEachFilesystemOnceBeforeAndOnceAfterItsInstalls(sameFilesystem: Bool) throws {
        let pair = FlushCountingPair(sameFilesystem: sameFilesystem)
        pair.engine.start()
        #expect(pair.isSynced)
        #expect(pair.local.calls(.synchronize) + pair.cloud.calls(.synchronize) == (sameFilesystem ? 2 : 4))
    }

    /// The flush of the cloud's filesystem fails: no upload may get its name (its bytes may
    /// not be durable), nor a download when both folders are on that filesystem; a download
    /// to another filesystem is installed (before, a failed flush abandoned the other side's
    /// copies in their temporary files when that side came second). All are synced once
    /// flushing works.
    @Test(arguments: [true, false])
    func aFailedFlushHoldsTheCopiesOfItsFilesystemOnly(sameFilesystem: Bool) throws {
        let pair = FlushCountingPair(sameFilesystem: sameFilesystem)
        pair.cloud.fail(.synchronize, with: .ioError)
        // One filesystem: a flush of it through either folder fails.
        if sameFilesystem { pair.local.fail(.synchronize, with: .ioError) }
        pair.engine.start()
        for name in FlushCountingPair.names {
            #expect(try pair.cloud.metadata(of: rp("up/\(name)")) == nil, "up/\(name) was installed unflushed")
            let downloaded = try pair.local.metadata(of: rp("down/\(name)")) != nil
            #expect(downloaded == !sameFilesystem, "down/\(name)")
        }
        pair.clock.advance(by: .seconds(3600))
        pair.engine.sync(nil)
        #expect(pair.isSynced)
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
        settings.copyThreads = 1  // As `Pair`: memory filesystems replay in order.
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

/// A pair whose first sync is one batch going both ways (files under `up` in the local
/// folder, under `down` in the cloud), its folders on one filesystem or on two.
private struct FlushCountingPair {
    static let names = ["a", "b", "c"]
    let clock = ManualClock()
    let local: FaultyFileSystem<MemoryFileSystem>
    let cloud: FaultyFileSystem<MemoryFileSystem>
    let engine: SyncEngine<FaultyFileSystem<MemoryFileSystem>>

    init(sameFilesystem: Bool) {
        local = FaultyFileSystem(MemoryFileSystem(time: clock.timeSource, device: 1))
        cloud = FaultyFileSystem(MemoryFileSystem(time: clock.timeSource, temporaryDirectory: RootMarkers.temporary(for: "laptop"),
                                                  device: sameFilesystem ? 1 : 2))
        for name in Self.names {
            try! local.base.write(rp("up/\(name)"), Array("up \(name)".utf8))
            try! cloud.base.write(rp("down/\(name)"), Array("down \(name)".utf8))
        }
        var settings = EngineSettings(deviceName: "laptop")
        settings.batchThreshold = 2
        settings.copyThreads = 1  // As `Pair`: memory filesystems replay in order.
        engine = SyncEngine(local: local, cloud: cloud, store: MemoryRecordStore(), records: [:], clock: clock,
                            settings: settings, log: .silent, rootNames: ("L", "C"))
    }

    /// Every file on both sides, with its content.
    var isSynced: Bool {
        Self.names.allSatisfy { name in
            (try? cloud.base.readFile(rp("up/\(name)"), limit: 100)) == Array("up \(name)".utf8)
                && (try? local.base.readFile(rp("down/\(name)"), limit: 100)) == Array("down \(name)".utf8)
        }
    }
}
