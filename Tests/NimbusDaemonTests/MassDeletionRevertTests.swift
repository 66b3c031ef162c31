import Synchronization
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
import NimbusVocabulary
@testable import NimbusDaemon

/// `revert-deletes` undoes a mass deletion as a whole (DESIGN §3), including the part the
/// event batcher handed over first, under the guard's limit, which was applied before the
/// rest tripped the guard: 300 synced files in three folders; the first pass deletes folder
/// `d0` and 30 files of `d1` (131 of 303 entries: applied), the second the rest (held).
@Suite struct MassDeletionRevertTests {
    static let folders = 3, filesPerFolder = 100
    static let holding = RootMarkers.deletedHolding

    static func name(_ folder: Int, _ file: Int) -> String { "d\(folder)/f\(file).txt" }
    static func content(_ folder: Int, _ file: Int) -> String { "content of d\(folder)/f\(file)\n" }
    static var all: [(Int, Int)] { (0..<folders).flatMap { d in (0..<filesPerFolder).map { (d, $0) } } }
    /// The first pass's part: all of `d0`, the first 30 files of `d1`.
    static func inFirstPart(_ folder: Int, _ file: Int) -> Bool { folder == 0 || (folder == 1 && file < 30) }

    /// A synced pair; the deletions are made in `deleted`'s folder (the other one follows).
    static func syncedPair() throws -> Pair {
        let pair = Pair()
        for d in 0..<folders { try pair.local.makeDirectory(rp("d\(d)"), mode: 0o750) }
        for (d, f) in all { try pair.local.write(rp(name(d, f)), Array(content(d, f).utf8)) }
        pair.engine.start()
        try #require(pair.content(pair.cloud, name(2, 99)) == content(2, 99))
        return pair
    }

    static func deleteFirstPart(in fs: MemoryFileSystem) throws {
        for (d, f) in all where inFirstPart(d, f) { try fs.removeFile(rp(name(d, f))) }
        try fs.removeDirectory(rp("d0"))
    }

    static func deleteTheRest(in fs: MemoryFileSystem) throws {
        for (d, f) in all where !inFirstPart(d, f) { try fs.removeFile(rp(name(d, f))) }
        for d in 1..<folders { try fs.removeDirectory(rp("d\(d)")) }
    }

    /// A synced pair after both parts of a deletion in the cloud: the first applied, the rest held.
    static func pairHoldingTheRestOfACloudDeletion() throws -> Pair {
        let pair = try syncedPair()
        try deleteFirstPart(in: pair.cloud)
        pair.sync()
        try deleteTheRest(in: pair.cloud)
        pair.sync()
        try #require(pair.engine.status.heldDeletes == 172)
        return pair
    }

    /// Every file is back on both sides with its content, and the holding folder is gone.
    static func expectEverythingBack(_ pair: Pair) {
        var missing: [String] = []
        for (d, f) in all {
            for fs in [pair.local, pair.cloud] where pair.content(fs, name(d, f)) != content(d, f) {
                missing.append((fs === pair.local ? "local " : "cloud ") + name(d, f))
            }
        }
        #expect(missing.isEmpty, "\(missing.count) files not brought back, e.g. \(missing.prefix(5))")
        #expect(pair.engine.status.heldDeletes == 0 && pair.engine.status.keptDeletes == 0)
        #expect(pair.local.snapshot()[holding] == nil, "the holding folder must go once everything is back")
        #expect(pair.cloud.snapshot()[holding] == nil)
    }

    @Test(arguments: Side.allCases)
    func aMassDeletionSplitInTwoPassesIsRevertedAsAWhole(deletedIn side: Side) throws {
        let pair = try Self.syncedPair()
        let deleted = side == .local ? pair.local : pair.cloud, other = side == .local ? pair.cloud : pair.local
        try Self.deleteFirstPart(in: deleted)
        pair.sync()
        #expect(pair.engine.status.heldDeletes == 0, "the first part is under the limit and is applied")
        #expect(pair.content(other, Self.name(0, 0)) == nil && pair.content(other, Self.name(1, 29)) == nil)
        #expect(other.snapshot()[rp("d0")] == nil, "the emptied folder is removed too")
        try Self.deleteTheRest(in: deleted)
        pair.sync()
        #expect(pair.engine.status.heldDeletes == 172)
        #expect(pair.engine.status.keptDeletes == 131, "status tells that the first part is kept and comes back with a revert")
        #expect(pair.content(other, Self.name(2, 0)) == Self.content(2, 0), "the rest is held")

        #expect(pair.engine.revertDeletes() == 303)
        Self.expectEverythingBack(pair)
        #expect(pair.local.snapshot()[rp("d0")]?.metadata.mode == 0o750 && pair.cloud.snapshot()[rp("d0")]?.metadata.mode == 0o750,
                "a folder comes back with its mode")
    }

    /// `status` never contradicts what was told: asked as the "holding" line is logged, or as
    /// the event reaches a watcher, it already counts the held deletions (it read 0 then, and
    /// `MassDeleteRevertTests` saw it through the real daemon under load).
    @Test(arguments: Side.allCases)
    func theHeldCountIsPublishedBeforeItIsTold(deletedIn side: Side) throws {
        let told = Told()
        let pair = Pair(log: Logger(threshold: .warning) { _, message in
            if message.hasPrefix("holding ") { told.note("log line") }
        })
        told.engine.withLock { $0 = pair.engine }
        pair.engine.onEvent { event in
            if case .deletionsHeld = event { told.note("event") }
        }
        for d in 0..<Self.folders { try pair.local.makeDirectory(rp("d\(d)"), mode: 0o750) }
        for (d, f) in Self.all { try pair.local.write(rp(Self.name(d, f)), Array(Self.content(d, f).utf8)) }
        pair.engine.start()
        for (d, f) in Self.all { try (side == .local ? pair.local : pair.cloud).removeFile(rp(Self.name(d, f))) }
        pair.sync()
        #expect(told.lines.withLock { $0 } == ["log line: 300", "event: 300"])
    }

    /// What the engine's status counted as held each time the deletions were told.
    final class Told: Sendable {
        let engine = Mutex<SyncEngine<MemoryFileSystem>?>(nil)
        let lines = Mutex<[String]>([])
        func note(_ what: String) {
            let held = engine.withLock { $0 }?.status.heldDeletes ?? -1
            lines.withLock { $0.append("\(what): \(held)") }
        }
    }

    @Test func keptLocalFilesAreNeitherUploadedNorListedAndGoOnceTheWindowHasPassed() throws {
        let pair = try Self.syncedPair()
        try Self.deleteFirstPart(in: pair.cloud)
        pair.sync()
        #expect(pair.content(pair.local, Self.name(1, 0)) == nil)
        #expect(pair.content(pair.local, Self.holding.description + "/" + Self.name(1, 0)) == Self.content(1, 0),
                "a file deleted in the cloud is kept locally in the holding folder for the window")
        #expect(pair.local.snapshot()[Self.holding]?.metadata.mode == 0o700, "only the owner may look into the holding folder")
        pair.sync()
        #expect(pair.cloud.snapshot().keys.allSatisfy { !Self.holding.contains($0) }, "kept files must not be uploaded")
        #expect(try pair.engine.listEntries(under: .root, recursive: true).allSatisfy { !Self.holding.contains($0.path) },
                "`nimbusctl ls` must not show kept files")

        let due = try #require(pair.engine.nextKeptRelease)
        #expect(due > pair.clock.monotonicNow, "nothing is due before the window has passed")
        pair.engine.releaseExpiredDeletions()
        #expect(pair.local.snapshot()[Self.holding] != nil)
        pair.clock.advance(by: due - pair.clock.monotonicNow)
        pair.engine.releaseExpiredDeletions()
        #expect(pair.local.snapshot().keys.allSatisfy { !Self.holding.contains($0) }, "the kept files and their folders go after the window")
        #expect(pair.engine.nextKeptRelease == nil)

        // Past the window, the rest is a deletion of its own: held (all of what is left), and
        // a revert brings back only that.
        try Self.deleteTheRest(in: pair.cloud)
        pair.sync()
        #expect(pair.engine.status.heldDeletes == 172)
        #expect(pair.engine.revertDeletes() == 172)
        #expect(pair.content(pair.cloud, Self.name(2, 5)) == Self.content(2, 5))
        #expect(pair.content(pair.local, Self.name(0, 5)) == nil)
    }

    @Test func confirmingLetsTheKeptFilesGo() throws {
        let pair = try Self.pairHoldingTheRestOfACloudDeletion()
        pair.clock.advance(by: .minutes(5))
        pair.engine.releaseExpiredDeletions()
        #expect(pair.content(pair.local, Self.holding.description + "/" + Self.name(0, 0)) == Self.content(0, 0),
                "while deletions are held, what the same deletion removed before stays kept")
        #expect(pair.engine.confirmDeletes() == 172)
        let left = pair.local.snapshot().keys.filter { $0 != RootMarkers.local }
        #expect(left.isEmpty, "after confirm-deletes nothing is left in the local folder, not even kept files: \(left.prefix(5))")
    }

    @Test func filesKeptWhenTheDaemonStoppedAreStillBroughtBackAfterItsRestart() throws {
        let pair = try Self.syncedPair()
        try Self.deleteFirstPart(in: pair.cloud)
        pair.sync()
        // nimbusd stops (or crashes) within the window; the rest of the deletion comes while it is down.
        try Self.deleteTheRest(in: pair.cloud)
        let restarted = SyncEngine(local: pair.local, cloud: pair.cloud, store: pair.store, records: pair.store.committed, clock: pair.clock,
                                   settings: pair.engine.settings, log: .silent, rootNames: ("L", "C"))
        pair.clock.advance(by: .seconds(1))
        restarted.start()
        #expect(restarted.status.heldDeletes == 172)
        #expect(restarted.revertDeletes() == 172 + 130, "the 130 files kept before the stop come back too (not the folder d0)")
        var missing: [String] = []
        for (d, f) in Self.all where pair.content(pair.local, Self.name(d, f)) != Self.content(d, f)
            || pair.content(pair.cloud, Self.name(d, f)) != Self.content(d, f) {
            missing.append(Self.name(d, f))
        }
        #expect(missing.isEmpty, "\(missing.count) files not brought back, e.g. \(missing.prefix(5))")
        #expect(pair.local.snapshot()[Self.holding] == nil)
        restarted.sync(nil)
        #expect(pair.local.snapshot()[rp("d0")]?.metadata.mode == 0o750 && pair.cloud.snapshot()[rp("d0")]?.metadata.mode == 0o750,
                "a folder deleted before the stop comes back with its own mode")
    }

    /// A kept file whose folder's name is taken by a file by the time of the revert comes back
    /// at the top of the local folder (and is uploaded): it is not left in the holding folder.
    @Test func aKeptFileWhoseFolderIsNowAFileComesBackAtTheTop() throws {
        let pair = try Self.pairHoldingTheRestOfACloudDeletion()
        try pair.local.write(rp("d0"), Array("a file where the folder was\n".utf8))
        #expect(pair.engine.revertDeletes() > 172)
        #expect(pair.content(pair.local, "d0") == "a file where the folder was\n")
        #expect(pair.content(pair.local, "f5.txt") == Self.content(0, 5))
        #expect(pair.content(pair.cloud, "f5.txt") == Self.content(0, 5), "what came back is uploaded")
        #expect(pair.content(pair.local, Self.name(1, 5)) == Self.content(1, 5))
        #expect(pair.local.snapshot()[Self.holding] == nil)
    }

    /// On a real disk, after a crash inside the window: the start-up sweep removes the
    /// temporaries left behind but not the files kept for the guard, which are adopted (never
    /// uploaded) and go a window later.
    @Test func aStartLeavesTheKeptFilesAndLetsThemGoAWindowLater() throws {
        let pair = try DiskPair()
        try pair.plant("local/.nimbus-tmp-deleted/d/kept.txt", "deleted by a sync just before a crash")
        try pair.plant("local/.nimbus-tmp-deleted/d/.nimbus-tmp-0123456789abcdef")
        pair.engine.start()
        #expect(pair.exists("local/.nimbus-tmp-deleted/d/kept.txt"), "the start-up sweep must leave a kept file")
        #expect(!pair.exists("local/.nimbus-tmp-deleted/d/.nimbus-tmp-0123456789abcdef"), "a temporary goes, wherever it is")
        #expect(!pair.exists("cloud/.nimbus-tmp-deleted") && !pair.exists("cloud/d/kept.txt"), "kept files are never uploaded")
        let due = try #require(pair.engine.nextKeptRelease, "the kept file counts as a deletion applied now")
        pair.clock.advance(by: due - pair.clock.monotonicNow)
        pair.engine.releaseExpiredDeletions()
        #expect(!pair.exists("local/.nimbus-tmp-deleted"), "nothing is left once the window has passed")
    }
}
