import NimbusCore
import NimbusSimulation
@testable import NimbusDaemon
import NimbusVocabulary
import Testing

/// A conflict whose local version cannot be moved to its copy's name (nimbusd run as its user,
/// the file in a folder root owns: rename fails with EACCES). Seen with the real daemon: the
/// plan went on to upload the copy that was never made, that upload's retry (1 s, under a name
/// new each second) planned the conflict again, and "conflict on …" was logged, recorded with a
/// copy that does not exist and notified every 2 s, for ever. Now nothing else is done at either
/// name, no conflict is recorded, and the path is tried again after 1 s, 2 s, 4 s…
@Suite struct UnmovableConflictTests {
    let clock = ManualClock()
    let local: FaultyFileSystem<MemoryFileSystem>
    let cloud: MemoryFileSystem
    let engine: SyncEngine<FaultyFileSystem<MemoryFileSystem>>

    init() {
        local = FaultyFileSystem(MemoryFileSystem(time: clock.timeSource, device: 1))
        cloud = MemoryFileSystem(time: clock.timeSource, temporaryDirectory: RootMarkers.temporary(for: "laptop"), device: 2)
        var settings = EngineSettings(deviceName: "laptop")
        settings.copyThreads = 1  // As `Pair`: memory filesystems replay in order.
        engine = SyncEngine(local: local, cloud: FaultyFileSystem(cloud), store: MemoryRecordStore(), records: [:], clock: clock,
                            settings: settings, log: .silent, rootNames: ("L", "C"))
    }

    func content(_ fs: MemoryFileSystem, _ path: String) -> String? {
        guard case .file(let bytes)? = fs.snapshot()[rp(path)]?.content else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    var conflictCopies: [RelativePath] {
        (local.base.snapshot().keys.map { $0 } + cloud.snapshot().keys.map { $0 }).filter { $0.description.contains("(conflict from") }
    }

    @Test func aConflictWhoseCopyCannotBeMadeIsTriedAgainWithGrowingPauses() throws {
        try local.base.write(rp("notes.md"), Array("base".utf8))
        engine.start()
        try local.base.write(rp("notes.md"), Array("mine".utf8))
        try cloud.write(rp("notes.md"), Array("theirs!".utf8))
        local.fail(.rename, path: rp("notes.md"), with: .permissionDenied, times: 1_000)

        clock.advance(by: .seconds(1))
        engine.sync(nil)
        var pauses: [Duration] = []
        for _ in 0..<4 {
            #expect(engine.conflicts().isEmpty, "a conflict is recorded whose copy was never made")
            #expect(conflictCopies.isEmpty, "a conflict copy appeared: \(conflictCopies)")
            #expect(content(local.base, "notes.md") == "mine" && content(cloud, "notes.md") == "theirs!", "a version was replaced")
            let due = try #require(engine.nextRetry, "the conflict is not tried again")
            pauses.append(due - clock.monotonicNow)
            clock.advance(by: due - clock.monotonicNow)
            let retried = engine.dueRetries()
            #expect(retried == [rp("notes.md")], "retries of other paths replan the conflict: \(retried)")
            engine.sync(retried)
        }
        #expect(pauses == [.seconds(1), .seconds(2), .seconds(4), .seconds(8)])

        local.removeAllFaults()
        clock.advance(by: try #require(engine.nextRetry) - clock.monotonicNow)
        engine.sync(engine.dueRetries())
        let copy = try #require(engine.conflicts().first?.conflictCopy, "the conflict is not settled once the file can be moved")
        #expect(content(local.base, "notes.md") == "theirs!" && content(cloud, copy.description) == "mine")
    }
}
