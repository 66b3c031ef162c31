import Foundation
import NimbusVocabulary
import Synchronization
import Testing
import NimbusCore
import NimbusProtocol
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon

/// SIGTERM during a long pass (issue 15): the pass stops between files at the heartbeat,
/// leaving the journal and both folders consistent, and the next start finishes the work.
@Suite struct EngineStopTests {
    static let fileCount = 300

    /// The pair's files, each in a folder of its own every ten files, so that folders are
    /// created in the pass too.
    static func name(_ i: Int) -> String { "d\(i / 10)/f\(i)" }

    /// With copies installed in one batch at the end of the plan (the default past 16 copies),
    /// and each on its own.
    @Test(arguments: [16, Int.max])
    func aPassStoppedMidwayIsFinishedByTheNextStart(batchThreshold: Int) throws {
        let pair = Pair { $0.batchThreshold = batchThreshold }
        for i in 0..<Self.fileCount { try pair.local.write(rp(Self.name(i)), Array("content \(i)".utf8)) }
        // The flag is raised from the heartbeat, as the signal handler would between two files.
        let beats = Mutex(0)
        let engine = pair.engine
        engine.onHeartbeat {
            if beats.withLock({ $0 += 1; return $0 }) == Self.fileCount / 3 { engine.requestStop() }
        }
        engine.start()

        let copied = (0..<Self.fileCount).filter { pair.content(pair.cloud, Self.name($0)) != nil }
        #expect(!copied.isEmpty && copied.count < Self.fileCount / 2, "the pass must stop about a third of the way, not at its end (\(copied.count) copied)")
        engine.sync(nil)
        #expect((0..<Self.fileCount).filter { pair.content(pair.cloud, Self.name($0)) != nil }.count == copied.count,
                "no pass may start once stopping")
        // What the journal holds was done, on both sides; nothing half-written was left.
        let committed = pair.store.committed
        #expect(!committed.isEmpty)
        for (path, record) in committed where record.base.kind == .file {
            #expect(pair.content(pair.cloud, path.description) == pair.content(pair.local, path.description), "\(path)")
        }
        #expect(!pair.cloud.snapshot().keys.contains { TemporaryName.isTemporary($0.name) }, "no temporary file may be left")

        // The next start, from the journal as committed, finishes the work; nothing is lost.
        let restarted = SyncEngine(local: pair.local, cloud: pair.cloud, store: pair.store, records: committed, clock: pair.clock,
                                   settings: engine.settings, log: .silent, rootNames: ("L", "C"))
        pair.clock.advance(by: .seconds(1))
        restarted.start()
        for i in 0..<Self.fileCount {
            #expect(pair.content(pair.local, Self.name(i)) == "content \(i)")
            #expect(pair.content(pair.cloud, Self.name(i)) == "content \(i)")
        }
        #expect(pair.store.committed.values.count { $0.base.kind == .file } == Self.fileCount)
    }

    /// A download cut short by a stop (SIGTERM while `nimbusctl download` waits) is answered
    /// with the protocol's `daemon_stopping` in plain words, and the file stays a placeholder,
    /// not a failure. Before, the client read "the operation failed: … CancellationError()"
    /// and the file was shown in error.
    @Test func aDownloadCutShortByAStopIsAnsweredInWords() throws {
        let pair = Pair { $0.onDemand = true }
        // Four chunks of the in-memory copy: a progress after each.
        try pair.cloud.write(rp("big.bin"), Array(repeating: 7, count: 256 << 10))
        let engine = pair.engine
        engine.start()
        #expect(engine.entry(rp("big.bin"))?.state == .notDownloaded)
        engine.onEvent { event in
            guard case .stateChanged(_, .downloading(let progress)) = event, progress > 0 else { return }
            engine.requestStop()
        }
        var answer: RPCError?
        do {
            _ = try engine.download(rp("big.bin"), .explicit)
            Issue.record("the download was finished, not given up at the stop")
        } catch {
            answer = ControlHandler.failure(error, path: rp("big.bin"))
        }
        let answered = try #require(answer)
        #expect(answered.name == .daemonStopping && answered.code == -32014, "\(answered)")
        #expect(answered.message == "the daemon is stopping" && !"\(answered)".contains("CancellationError"), "\(answered)")
        #expect(engine.entry(rp("big.bin"))?.state == .notDownloaded, "a stop is no failure of the file's")
        #expect(pair.content(pair.local, "big.bin") == nil, "nothing half-downloaded is left")
    }

    /// A stop during the scan of one big folder (issue 15: the stop was looked at only before
    /// each folder, so a folder of 100 000 entries was listed whole first) ends the scan at its
    /// next checkpoint, and the watchdog is fed meanwhile. The files here are ignored (a
    /// build's output), so nothing but the scan runs: before, it fed the watchdog not once,
    /// however long the listing took.
    @Test func aStopEndsTheScanOfOneBigFolder() throws {
        let pair = Pair()
        let count = CheckpointInterval.scanEntries * 4
        for index in 0..<count { try pair.local.write(rp("out\(index).o"), Array("object \(index)".utf8)) }
        let engine = pair.engine
        engine.settings.isIgnored = { path, _ in path.description.hasSuffix(".o") }
        let beats = Mutex(0)
        engine.onHeartbeat {
            beats.withLock { $0 += 1 }
            engine.requestStop()
        }
        engine.start()
        #expect(beats.withLock { $0 } == 1, "the scan feeds the watchdog at its first checkpoint, then ends at its next one")
        #expect(pair.store.committed.isEmpty, "nothing is recorded from the half scan")
    }
}
