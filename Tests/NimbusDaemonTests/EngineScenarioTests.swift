import Foundation
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon

/// A synced pair in memory, for deterministic scenarios.
struct Pair {
    let clock = ManualClock()
    let local: MemoryFileSystem
    let cloud: MemoryFileSystem
    let store = MemoryRecordStore()
    let engine: SyncEngine<MemoryFileSystem>

    /// `log`: where the engine logs (nil: nowhere, or stderr with NIMBUS_DEBUG set).
    init(settings: (inout EngineSettings) -> Void = { _ in }, cloudCapacity: Int64 = 1 << 40, log: Logger? = nil) {
        local = MemoryFileSystem(time: clock.timeSource, device: 1)
        cloud = MemoryFileSystem(time: clock.timeSource, capacity: cloudCapacity, temporaryDirectory: RootMarkers.temporary(for: "laptop"), device: 2)
        var s = EngineSettings(deviceName: "laptop")
        // One thread prepares the copies: MemoryFileSystem is thread-safe, but its inode numbers
        // (and a FaultyFileSystem's random draws) follow the order of calls, which must replay.
        s.copyThreads = 1
        settings(&s)
        engine = SyncEngine(local: local, cloud: cloud, store: store, records: [:], clock: clock, settings: s,
                            log: log ?? (ProcessInfo.processInfo.environment["NIMBUS_DEBUG"] != nil ? Logger(threshold: .debug, journald: false) : .silent),
                            rootNames: ("L", "C"))
    }

    func content(_ fs: MemoryFileSystem, _ path: String) -> String? {
        guard case .file(let bytes)? = fs.snapshot()[rp(path)]?.content else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    func sync() {
        clock.advance(by: .seconds(1))
        engine.sync(nil)
    }
}

@Suite struct EngineScenarioTests {
    /// Two devices editing one file: conflicts follow each other within a second, each in a
    /// pass over that file alone. The second copy's name was the first's (the pass did not
    /// see it), its creation failed with "File exists", and the conflict waited for a retry.
    @Test func aSecondConflictInTheSameSecondGetsANameOfItsOwn() throws {
        let pair = Pair()
        try pair.local.write(rp("a.txt"), Array("base".utf8))
        pair.engine.start()
        pair.clock.advance(by: .seconds(5))
        for round in 1...2 {
            try pair.local.write(rp("a.txt"), Array("local \(round)".utf8))
            try pair.cloud.write(rp("a.txt"), Array("cloud \(round)".utf8))
            pair.engine.sync([rp("a.txt")])
        }
        #expect(pair.engine.errorCount == 0, "\(pair.engine.status.lastError ?? "")")
        let copies = pair.local.snapshot().keys.filter { $0.description.contains("conflict") }
        #expect(Set(copies.compactMap { pair.content(pair.local, $0.description) }) == ["local 1", "local 2"], "copies: \(copies)")
        #expect(pair.content(pair.local, "a.txt") == "cloud 2")
    }

    @Test func anUnreadableFolderIsNeitherDeletedNorCopied() throws {
        let pair = Pair()
        try pair.local.write(rp("d/a"), Array("one".utf8))
        pair.engine.start()
        #expect(pair.content(pair.cloud, "d/a") == "one")
        try pair.local.setAttributes(rp("d"), mode: 0o000, mtime: nil)
        pair.sync()
        #expect(pair.content(pair.cloud, "d/a") == "one", "the cloud copy must survive an unreadable local folder")
        try pair.local.setAttributes(rp("d"), mode: 0o755, mtime: nil)
        try pair.local.write(rp("d/b"), Array("two".utf8))
        pair.sync()
        #expect(pair.content(pair.cloud, "d/b") == "two")
    }

    /// Status is truthful about a folder it cannot read: what is in it does not sync, so it is
    /// an error (counted, listed, the last error) until the folder is read again. Before,
    /// status said "Up to date" (seen: a folder without permission, and one past PATH_MAX).
    @Test func anUnreadableFolderIsAnErrorUntilItIsReadAgain() throws {
        let pair = Pair()
        try pair.local.write(rp("d/a"), Array("one".utf8))
        try pair.local.write(rp("e/b"), Array("two".utf8))
        pair.engine.start()
        try pair.local.setAttributes(rp("d"), mode: 0o000, mtime: nil)
        pair.sync()
        #expect(pair.engine.errorCount == 1)
        #expect(pair.engine.status.lastError?.contains("cannot read d in the local folder") == true, "\(pair.engine.status.lastError ?? "")")
        #expect(pair.engine.entry(rp("d"))?.state.message?.contains("cannot read d") == true)
        pair.sync()
        pair.engine.sync([rp("e")])
        #expect(pair.engine.errorCount == 1, "still unreadable: still an error")
        try pair.local.setAttributes(rp("d"), mode: 0o755, mtime: nil)
        pair.sync()
        #expect(pair.engine.errorCount == 0, "read again: no longer an error")
    }

    @Test func massDeletesAreHeldUntilConfirmed() throws {
        let pair = Pair()
        for i in 0..<300 { try pair.local.write(rp("f\(i)"), Array("x\(i)".utf8)) }
        pair.engine.start()
        for i in 0..<250 { try pair.local.removeFile(rp("f\(i)")) }
        pair.sync()
        #expect(pair.engine.status.heldDeletes == 250)
        #expect(pair.content(pair.cloud, "f0") == "x0", "held deletions must not happen")
        #expect(pair.engine.confirmDeletes() == 250)
        #expect(pair.content(pair.cloud, "f0") == nil)
        #expect(pair.content(pair.cloud, "f299") == "x299")
        #expect(pair.engine.status.heldDeletes == 0)
        // The deleted content is kept in the versions store.
        #expect(try pair.engine.versions(of: rp("f0")).count == 1)
    }

    @Test func revertedDeletesComeBack() throws {
        let pair = Pair()
        for i in 0..<200 { try pair.local.write(rp("f\(i)"), Array("x\(i)".utf8)) }
        pair.engine.start()
        for i in 0..<200 { try pair.cloud.removeFile(rp("f\(i)")) }
        pair.sync()
        #expect(pair.engine.status.heldDeletes == 200)
        #expect(pair.engine.revertDeletes() == 200)
        #expect(pair.content(pair.cloud, "f7") == "x7")
        #expect(pair.content(pair.local, "f7") == "x7")
    }

    @Test func aMissingCloudMarkerHaltsWithoutDeleting() throws {
        let pair = Pair()
        try pair.local.write(rp("a"), Array("keep".utf8))
        pair.engine.start()
        // The cloud disk is "unmounted": an empty folder in its place.
        try pair.cloud.removeRecursively(.root)
        try pair.cloud.makeDirectories(.root)
        pair.sync()
        guard case .halted(let message) = pair.engine.status.phase else {
            Issue.record("expected the pair to halt, got \(pair.engine.status.phase)")
            return
        }
        #expect(message.contains("no Nimbus marker"))
        #expect(pair.content(pair.local, "a") == "keep")
    }

    /// The user's pause and a missing root are two records: pausing while halted and resuming
    /// shows the halt again at once (it showed idle, until the next pass looked at the roots,
    /// and the runtime's halted-only rules lapsed meanwhile), and a root that comes back while
    /// paused ends the halt, not the pause.
    @Test func aPauseAndAHaltAreKeptApart() throws {
        let pair = Pair()
        try pair.local.write(rp("a"), Array("keep".utf8))
        pair.engine.start()
        let marker = rp(".nimbus/root"), away = rp(".nimbus/root-away")
        try pair.cloud.rename(marker, to: away, replacing: false)
        pair.sync()
        guard case .halted(let message) = pair.engine.status.phase else {
            Issue.record("expected the pair to halt, got \(pair.engine.status.phase)")
            return
        }
        pair.engine.setPaused(true)
        #expect(pair.engine.isPaused && pair.engine.status.paused)
        #expect(pair.engine.status.phase == .halted(message), "the halt shows while paused")
        pair.engine.setPaused(false)
        #expect(!pair.engine.isPaused, "resumed")
        #expect(pair.engine.status.phase == .halted(message), "resuming does not end the halt")
        #expect(pair.engine.status.isHalted)

        pair.engine.setPaused(true)
        try pair.cloud.rename(away, to: marker, replacing: false)
        pair.sync()
        #expect(!pair.engine.status.isHalted, "the marker is back")
        #expect(pair.engine.isPaused && pair.engine.status.phase == .paused, "the root's return does not resume")
        pair.engine.setPaused(false)
        #expect(pair.engine.status.phase == .idle)
        #expect(pair.content(pair.local, "a") == "keep" && pair.content(pair.cloud, "a") == "keep")
    }

    @Test func overwrittenCloudContentIsKeptAsAVersionAndRestorable() throws {
        let pair = Pair()
        try pair.local.write(rp("doc.txt"), Array("v1".utf8))
        pair.engine.start()
        try pair.local.write(rp("doc.txt"), Array("v2".utf8))
        pair.sync()
        #expect(pair.content(pair.cloud, "doc.txt") == "v2")
        let versions = try pair.engine.versions(of: rp("doc.txt"))
        #expect(versions.count == 1)
        _ = try pair.engine.restore(rp("doc.txt"), versionID: versions[0].id, to: nil)
        #expect(pair.content(pair.cloud, "doc.txt") == "v1")
        #expect(pair.content(pair.local, "doc.txt") == "v1")
        #expect(try pair.engine.versions(of: rp("doc.txt")).count == 2, "the replaced v2 is kept too")
    }

    @Test func aConflictKeepsBothVersionsAndCanBeResolved() throws {
        let pair = Pair()
        try pair.local.write(rp("notes.md"), Array("base".utf8))
        pair.engine.start()
        try pair.local.write(rp("notes.md"), Array("mine".utf8))
        try pair.cloud.write(rp("notes.md"), Array("theirs!".utf8))
        pair.sync()
        let conflicts = pair.engine.conflicts()
        #expect(conflicts.count == 1)
        #expect(pair.content(pair.local, "notes.md") == "theirs!")
        let copy = try #require(conflicts.first?.conflictCopy)
        #expect(copy.description.hasPrefix("notes (conflict from laptop "))
        #expect(pair.content(pair.cloud, copy.description) == "mine")
        #expect(pair.engine.entry(rp("notes.md"))?.state == .conflict)
        try pair.engine.resolve(rp("notes.md"), keep: .local)
        #expect(pair.content(pair.local, "notes.md") == "mine")
        #expect(pair.content(pair.cloud, "notes.md") == "mine")
        #expect(pair.engine.conflicts().isEmpty)
    }

    @Test func resolvingForTheLocalCopyKeepsAnEditMadeSinceTheConflict() throws {
        let pair = Pair()
        try pair.local.write(rp("notes.md"), Array("base".utf8))
        pair.engine.start()
        try pair.local.write(rp("notes.md"), Array("mine".utf8))
        try pair.cloud.write(rp("notes.md"), Array("theirs!".utf8))
        pair.sync()
        #expect(pair.engine.conflicts().count == 1)
        // Edited here after the conflict, before the engine has seen it.
        try pair.local.write(rp("notes.md"), Array("theirs, edited here".utf8))
        try pair.engine.resolve(rp("notes.md"), keep: .local)
        #expect(pair.content(pair.local, "notes.md") == "mine")
        let kept = try pair.engine.versions(of: rp("notes.md")).map { pair.content(pair.cloud, $0.location.description) }
        #expect(kept.contains("theirs, edited here"), "the edit made since the conflict is lost; versions hold \(kept)")
    }

    @Test func aFullCloudDiskIsAnErrorStateThenRecovers() throws {
        let pair = Pair(cloudCapacity: 1000)
        pair.engine.start()
        try pair.local.write(rp("big"), [UInt8](repeating: 7, count: 5000))
        pair.sync()
        #expect(pair.engine.entry(rp("big"))?.state.message?.contains("disk is full") == true)
        #expect(pair.cloud.snapshot()[rp("big")] == nil, "no partial file")
        pair.cloud.capacity = 1 << 20
        pair.clock.advance(by: .seconds(5))
        pair.engine.sync(pair.engine.dueRetries())
        #expect(pair.cloud.snapshot()[rp("big")] != nil)
        #expect(pair.engine.entry(rp("big"))?.state == .downloaded)
    }
}
