import Synchronization
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon
import NimbusVocabulary

/// The local folder's marker is written at a first pairing without a flush of its own; the
/// journal's first commit, which makes the pair paired, waits until a flush of the local
/// filesystem made it durable (RootMarkers: issue 15, two fsyncs before the first copy).
@Suite struct LocalMarkerDurabilityTests {
    /// Uploads only: the batch flushes the cloud's filesystem. On one filesystem that flush
    /// made the marker durable too, and nothing more is flushed; on two, the local folder is
    /// flushed once before the first commit.
    @Test(arguments: [true, false])
    func theLocalMarkerIsFlushedBeforeTheFirstCommit(sameFilesystem: Bool) throws {
        let pair = UploadingPair(sameFilesystem: sameFilesystem)
        pair.engine.start()
        #expect(pair.isSynced)
        let first = try #require(pair.store.flushesAtCommits.first, "nothing was committed")
        #expect(first.local + first.cloud >= 1 && (sameFilesystem || first.local == 1), "flushes before the first commit: \(first)")
        let all = (local: pair.local.calls(.synchronize), cloud: pair.cloud.calls(.synchronize))
        #expect(all.local == (sameFilesystem ? 0 : 1) && all.cloud == 2, "flushes in all: \(all)")
    }

    /// The local folder cannot be flushed: nothing is committed (the pair must not count as
    /// paired while its marker may not be durable); once it can, the next commit writes all.
    @Test func aFailedFlushOfTheLocalFolderHoldsTheFirstCommit() throws {
        let pair = UploadingPair(sameFilesystem: false)
        pair.local.fail(.synchronize, with: .ioError)
        pair.engine.start()
        #expect(pair.store.flushesAtCommits.isEmpty && pair.store.memory.committed.isEmpty)
        // What status says meanwhile (it said "Up to date"): sync goes on, nothing is recorded.
        let held = pair.engine.status.journalError ?? ""
        #expect(held.contains("cannot flush the local folder"), "status does not say the journal is held: \(held)")
        try pair.local.base.write(rp("up/d"), Array("up d".utf8))
        pair.engine.sync(nil)
        #expect(pair.store.memory.committed[rp("up/a")] != nil, "committed once the local folder was flushed")
        #expect(pair.isSynced)
        #expect(pair.engine.status.journalError == nil, "the journal works again, and status still says it does not")
    }

    /// The local folder cannot be flushed for a while: the held commit is tried again after
    /// 1 s, 2 s, 4 s… with no change to any file, logged as an error once for the streak, and
    /// everything is committed as soon as the flush works.
    @Test func aHeldCommitIsTriedAgainWithBackOffAndLoggedOncePerStreak() throws {
        let logged = Mutex<[(level: Logger.Level, message: String)]>([])
        let pair = UploadingPair(sameFilesystem: false, log: Logger(threshold: .notice) { level, message in
            logged.withLock { $0.append((level, message)) }
        })
        pair.local.fail(.synchronize, with: .ioError, times: 1_000)
        pair.engine.start()
        var pauses: [Duration] = []
        for _ in 0..<3 {
            let due = try #require(pair.engine.nextRetry, "the held commit is tried again")
            pauses.append(due - pair.clock.monotonicNow)
            pair.clock.advance(by: due - pair.clock.monotonicNow)
            pair.engine.retryCommitIfDue()
        }
        #expect(pauses == [.seconds(1), .seconds(2), .seconds(4)])
        #expect(pair.local.calls(.synchronize) == 4, "the start and three tries")
        #expect(pair.store.memory.committed.isEmpty)
        #expect(pair.engine.status.journalError != nil, "status does not say the journal is held")

        pair.local.removeAllFaults()
        let due = try #require(pair.engine.nextRetry)
        pair.clock.advance(by: due - pair.clock.monotonicNow)
        pair.engine.retryCommitIfDue()
        #expect(UploadingPair.names.allSatisfy { pair.store.memory.committed[rp("up/\($0)")] != nil }, "committed once the flush works")
        #expect(pair.engine.nextRetry == nil)
        #expect(pair.engine.status.journalError == nil)
        let aboutTheJournal = logged.withLock { $0.filter { $0.level == .error || $0.message.contains("journal") } }
        #expect(aboutTheJournal.map(\.level) == [.error, .notice], "one error for the streak, one note when it ends: \(aboutTheJournal)")
    }
}

/// A pair whose first sync uploads a few files in one batch, its folders on one filesystem
/// or on two, with a journal that notes how often each folder was flushed at each commit,
/// and a trace of what both folders and the journal did, in order (`local`, `cloud`, `journal`).
struct UploadingPair {
    static let names = ["a", "b", "c"]
    let clock = ManualClock()
    let trace = OperationTrace()
    let local: FaultyFileSystem<MemoryFileSystem>
    let cloud: FaultyFileSystem<MemoryFileSystem>
    let store: FlushNotingStore
    let engine: SyncEngine<FaultyFileSystem<MemoryFileSystem>>

    init(sameFilesystem: Bool, log: Logger = .silent, settings adjust: (inout EngineSettings) -> Void = { _ in }) {
        local = FaultyFileSystem(MemoryFileSystem(time: clock.timeSource, device: 1), trace: (trace, "local"))
        cloud = FaultyFileSystem(MemoryFileSystem(time: clock.timeSource, temporaryDirectory: RootMarkers.temporary(for: "laptop"),
                                                  device: sameFilesystem ? 1 : 2), trace: (trace, "cloud"))
        for name in Self.names { try! local.base.write(rp("up/\(name)"), Array("up \(name)".utf8)) }
        let (local, cloud) = (local, cloud)
        store = FlushNotingStore(trace: trace) { (local.calls(.synchronize), cloud.calls(.synchronize)) }
        var settings = EngineSettings(deviceName: "laptop")
        settings.batchThreshold = 2
        settings.copyThreads = 1  // As `Pair`: memory filesystems replay in order.
        adjust(&settings)
        engine = SyncEngine(local: local, cloud: cloud, store: store, records: [:], clock: clock,
                            settings: settings, log: log, rootNames: ("L", "C"))
    }

    func faulty(_ side: Side) -> FaultyFileSystem<MemoryFileSystem> { side == .local ? local : cloud }

    /// After the first sync: `up` made read-only (0555) locally, and synced so on both sides.
    func syncUpReadOnly() throws {
        engine.start()
        clock.advance(by: .seconds(1))
        try local.base.setAttributes(rp("up"), mode: 0o555, mtime: nil)
        engine.sync(nil)
        #expect(try cloud.base.metadata(of: rp("up"))?.mode == 0o555, "the folder is read-only on both sides")
    }

    var isSynced: Bool {
        Self.names.allSatisfy { (try? cloud.base.readFile(rp("up/\($0)"), limit: 100)) == Array("up \($0)".utf8) }
    }
}

/// `MemoryRecordStore`, noting the flushes made so far at each commit that wrote records, and
/// in `trace` (as `journal`) each such `commit` and each write of the note of lent modes.
/// Who owns what: the engine's thread, as `MemoryRecordStore`.
final class FlushNotingStore: RecordStore, @unchecked Sendable {
    let memory = MemoryRecordStore()
    let trace: OperationTrace?
    let flushes: () -> (local: Int, cloud: Int)
    /// Runs after each write of the note of lent modes, with what it holds: the moment
    /// between Nimbus's read of a mode and its chmod, where a user's chmod may fall.
    var afterNoteLentModes: (([LentMode]) -> Void)?
    private(set) var flushesAtCommits: [(local: Int, cloud: Int)] = []
    private var hasPending = false

    init(trace: OperationTrace? = nil, flushes: @escaping () -> (local: Int, cloud: Int)) {
        self.trace = trace
        self.flushes = flushes
    }

    func put(_ path: RelativePath, _ record: PathRecord) { hasPending = true; memory.put(path, record) }
    func remove(_ path: RelativePath) { hasPending = true; memory.remove(path) }
    func commit() throws {
        if hasPending {
            flushesAtCommits.append(flushes())
            trace?.append("journal", "commit")
        }
        hasPending = false
        try memory.commit()
    }
    func compactIfNeeded(_ all: @autoclosure () -> [(key: RelativePath, value: PathRecord)]) throws {}
    func lentModes() throws -> [LentMode] { try memory.lentModes() }
    func noteLentModes(_ entries: [LentMode]) throws {
        try memory.noteLentModes(entries)
        trace?.append("journal", "noteLentModes", entries.map(\.path))
        afterNoteLentModes?(entries)
    }
}
