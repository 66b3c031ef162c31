import Foundation
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon

/// Real-name placeholders in the engine (DESIGN §5, issue 16) on the in-memory pair, with the
/// kernel's hooks played by `FakePlaceholderMarker`. The real kernel is exercised by the
/// integration tests (RealNamePlaceholderTests).
@Suite struct RealNamePlaceholderEngineTests {
    struct Fixture {
        let pair: Pair
        let marker: FakePlaceholderMarker
        var engine: SyncEngine<MemoryFileSystem> { pair.engine }

        init(onDemand: Bool = true) {
            pair = Pair { $0.onDemand = onDemand; $0.placeholderStyle = .realName }
            marker = FakePlaceholderMarker(local: pair.local, cloud: pair.cloud)
            pair.engine.marker = marker
        }

        func bytes(_ path: String) -> [UInt8]? {
            guard case .file(let bytes)? = pair.local.snapshot()[rp(path)]?.content else { return nil }
            return bytes
        }

        func isHoles(_ path: String) -> Bool { bytes(path).map { $0.allSatisfy { $0 == 0 } } ?? false }

        /// A program opens `path`: what the listener does, told to the engine.
        func open(_ path: String) {
            if let outcome = marker.open(rp(path)) { engine.applyHydration(outcome) }
        }

        /// A new engine on the same folders and journal (a restart), in `style`.
        func restarted(style: PlaceholderStyle, marker newMarker: FakePlaceholderMarker?) -> SyncEngine<MemoryFileSystem> {
            var settings = engine.settings
            settings.placeholderStyle = style
            let engine = SyncEngine(local: pair.local, cloud: pair.cloud, store: pair.store, records: pair.store.committed,
                                    clock: pair.clock, settings: settings, log: .silent, rootNames: ("L", "C"))
            engine.marker = newMarker
            return engine
        }
    }

    @Test func cloudFilesAppearUnderTheirRealNamesWithSizeMtimeAndMode() throws {
        let f = Fixture()
        try f.pair.cloud.write(rp("d/report.pdf"), Array("twelve bytes".utf8))
        try f.pair.cloud.setAttributes(rp("d/report.pdf"), mode: 0o640, mtime: 1_600_000_000_000_000_000)
        f.engine.start()
        let here = try #require(try f.pair.local.metadata(of: rp("d/report.pdf")))
        #expect(here.size == 12 && here.mode == 0o640 && here.mtime == 1_600_000_000_000_000_000)
        #expect(f.isHoles("d/report.pdf"), "nothing is downloaded")
        #expect(f.pair.local.snapshot()[rp("d/report.pdf.nimbus")] == nil)
        #expect(try f.pair.local.extendedAttribute(Placeholder.stateAttribute, of: rp("d/report.pdf")) == Array("notDownloaded".utf8))
        #expect(f.engine.entry(rp("d/report.pdf"))?.state == .notDownloaded)
        #expect(f.marker.isPlaceholder(rp("d/report.pdf")), "marked and known before anyone can open it")
        let before = f.pair.store.writes
        f.pair.sync()
        #expect(f.pair.store.writes == before, "a second pass finds nothing to do")
        #expect(f.pair.content(f.pair.cloud, "d/report.pdf") == "twelve bytes")
    }

    @Test func openingFillsInPlaceAndTheJournalSaysDownloaded() throws {
        let f = Fixture()
        try f.pair.cloud.write(rp("a"), Array("cloud bytes".utf8))
        f.engine.start()
        let placeholder = try #require(try f.pair.local.metadata(of: rp("a")))
        f.open("a")
        #expect(f.pair.content(f.pair.local, "a") == "cloud bytes")
        #expect(try f.pair.local.metadata(of: rp("a"))?.inode == placeholder.inode, "filled in place")
        #expect(f.engine.entry(rp("a"))?.state == .downloaded)
        #expect(!f.marker.isPlaceholder(rp("a")))
        let cloudBefore = try #require(try f.pair.cloud.metadata(of: rp("a")))
        f.pair.sync()
        #expect(try f.pair.cloud.metadata(of: rp("a"))?.inode == cloudBefore.inode, "nothing uploaded back")
        try f.pair.cloud.write(rp("a"), Array("newer".utf8))
        f.pair.sync()
        #expect(f.pair.content(f.pair.local, "a") == "newer", "a downloaded file stays downloaded")
    }

    @Test func downloadAndPinReplaceThePlaceholderAndEvictPunchesInPlace() throws {
        let f = Fixture()
        try f.pair.cloud.write(rp("a"), Array("one".utf8))
        try f.pair.cloud.write(rp("b"), Array("two".utf8))
        f.engine.start()
        #expect(try f.engine.download(rp("a"), .explicit)?.state == .downloaded)
        #expect(f.pair.content(f.pair.local, "a") == "one")
        #expect(try f.engine.pin(rp("b"))?.state == .downloaded)
        #expect(f.pair.content(f.pair.local, "b") == "two")
        #expect(!f.marker.isPlaceholder(rp("a")) && !f.marker.isPlaceholder(rp("b")))

        let pinned = #expect(throws: EngineRequestError.self) { try f.engine.evict(rp("b")) }
        #expect(pinned?.kind == .pinned)
        let downloaded = try #require(try f.pair.local.metadata(of: rp("a")))
        #expect(try f.engine.evict(rp("a"))?.state == .notDownloaded)
        let evicted = try #require(try f.pair.local.metadata(of: rp("a")))
        #expect(evicted.inode == downloaded.inode && evicted.size == 3 && evicted.mtime == downloaded.mtime, "in place")
        #expect(f.isHoles("a"))
        #expect(f.marker.calls.withLock { $0.suffix(2) } == ["mark a", "punch a"], "marked before the content goes")
        #expect(f.pair.store.committed[rp("a")]?.isPlaceholder == true)
        #expect(f.engine.entry(rp("a"))?.residency == .evicted)
        #expect(f.pair.content(f.pair.cloud, "a") == "one")
        f.open("a")
        #expect(f.pair.content(f.pair.local, "a") == "one", "evicted, then read again")
        #expect(f.engine.entry(rp("a"))?.state == .downloaded)
    }

    @Test func aChangedFileIsNotEvicted() throws {
        let f = Fixture(onDemand: false)
        try f.pair.local.write(rp("a"), Array("one".utf8))
        f.engine.start()
        try f.pair.local.write(rp("a"), Array("changed".utf8))
        let refused = #expect(throws: EngineRequestError.self) { try f.engine.evict(rp("a")) }
        #expect(refused?.kind == .notInSync)
        #expect(f.pair.content(f.pair.local, "a") == "changed")
    }

    @Test func renamingDeletingAndChmodOfAPlaceholderReachTheCloudWithoutADownload() throws {
        let f = Fixture()
        for (name, text) in [("a", "one"), ("b", "two"), ("c", "three")] { try f.pair.cloud.write(rp(name), Array(text.utf8)) }
        f.engine.start()
        try f.pair.local.rename(rp("a"), to: rp("renamed"), replacing: false)
        try f.pair.local.removeFile(rp("b"))
        try f.pair.local.setAttributes(rp("c"), mode: 0o600, mtime: nil)
        f.pair.sync()
        #expect(f.pair.content(f.pair.cloud, "renamed") == "one" && f.pair.content(f.pair.cloud, "a") == nil)
        #expect(f.pair.content(f.pair.cloud, "b") == nil)
        #expect(try f.engine.versions(of: rp("b")).count == 1, "the deleted content is kept in the versions store")
        #expect(try f.pair.cloud.metadata(of: rp("c"))?.mode == 0o600)
        #expect(f.pair.content(f.pair.cloud, "c") == "three")
        #expect(f.isHoles("renamed") && f.isHoles("c"), "nothing downloaded")
        #expect(f.marker.isPlaceholder(rp("renamed")), "the listener knows the new name")
        f.open("renamed")
        #expect(f.pair.content(f.pair.local, "renamed") == "one")
    }

    @Test func aCloudChangeRewritesThePlaceholderWithItsNewSize() throws {
        let f = Fixture()
        try f.pair.cloud.write(rp("a"), Array("one".utf8))
        f.engine.start()
        try f.pair.cloud.write(rp("a"), Array("a longer version".utf8))
        f.pair.sync()
        #expect(try f.pair.local.metadata(of: rp("a"))?.size == 16)
        #expect(f.isHoles("a"))
        #expect(f.pair.content(f.pair.cloud, "a") == "a longer version", "the placeholder is never uploaded")
        f.open("a")
        #expect(f.pair.content(f.pair.local, "a") == "a longer version")
    }

    /// Issue 16 item 8: switching a pair's style converts its placeholders both ways, with
    /// nothing downloaded and nothing in the cloud changed.
    @Test func switchingStylesConvertsBothWaysWithoutDownloading() throws {
        let f = Fixture()
        for name in ["a", "d/b", "x"] { try f.pair.cloud.write(rp(name), Array("cloud \(name)".utf8)) }
        let suffix = f.restarted(style: .suffix, marker: nil)
        suffix.start()
        #expect(f.pair.local.snapshot()[rp("d/b.nimbus")] != nil)
        let cloudBefore = f.pair.cloud.syncedView()

        let marker = FakePlaceholderMarker(local: f.pair.local, cloud: f.pair.cloud)
        let realName = f.restarted(style: .realName, marker: marker)
        realName.start()
        for name in ["a", "d/b", "x"] {
            #expect(f.isHoles(name), "\(name) is a real-name placeholder")
            #expect(realName.entry(rp(name))?.state == .notDownloaded, "\(name)")
            #expect(marker.isPlaceholder(rp(name)), "\(name)")
        }
        #expect(f.pair.local.snapshot()[rp("a.nimbus")] == nil && f.pair.local.snapshot()[rp("d/b.nimbus")] == nil)
        #expect(f.pair.cloud.syncedView() == cloudBefore, "nothing changed in the cloud")

        let back = f.restarted(style: .suffix, marker: nil)
        back.start()
        for name in ["a", "d/b", "x"] {
            #expect(f.pair.content(f.pair.local, name + ".nimbus").flatMap { Placeholder.parse(Array($0.utf8)) } != nil, "\(name)")
            #expect(back.entry(rp(name))?.state == .notDownloaded)
        }
        #expect(f.pair.local.snapshot()[rp("a")] == nil && f.pair.local.snapshot()[rp("d/b")] == nil)
        #expect(f.pair.cloud.syncedView() == cloudBefore, "nothing changed in the cloud")
        #expect(try back.download(rp("x.nimbus"), .explicit)?.state == .downloaded)
        #expect(f.pair.content(f.pair.local, "x") == "cloud x")
    }

    /// Issue 16 item 3: at a clean stop placeholders lose their permission bits; at the next
    /// start they are marked before they get them back, and the guard is no change to sync.
    @Test func theGuardIsTakenOffOnlyOnceMarked() throws {
        let f = Fixture()
        try f.pair.cloud.write(rp("a"), Array("one".utf8))
        try f.pair.cloud.setAttributes(rp("a"), mode: 0o644, mtime: nil)
        f.engine.start()
        f.engine.guardPlaceholders()
        #expect(try f.pair.local.metadata(of: rp("a"))?.mode == 0)
        let cloudBefore = try #require(try f.pair.cloud.metadata(of: rp("a")))
        // While guarded and unmarked (no daemon), a pass changes nothing.
        let unmarked = f.restarted(style: .realName, marker: nil)
        unmarked.sync(nil)
        #expect(try f.pair.cloud.metadata(of: rp("a")) == cloudBefore)
        let marker = FakePlaceholderMarker(local: f.pair.local, cloud: f.pair.cloud)
        let next = f.restarted(style: .realName, marker: marker)
        next.start()
        #expect(marker.calls.withLock { $0 } == ["mark a", "unguard a"])
        #expect(try f.pair.local.metadata(of: rp("a"))?.mode == 0o644)
        #expect(try f.pair.cloud.metadata(of: rp("a")) == cloudBefore)
        if let outcome = marker.open(rp("a")) { next.applyHydration(outcome) }
        #expect(f.pair.content(f.pair.local, "a") == "one")
    }

    @Test func theCacheBudgetEvictsInPlace() throws {
        let f = Fixture()
        for name in ["a", "b"] { try f.pair.cloud.write(rp(name), Array(repeating: 1, count: 100)) }
        f.engine.start()
        for name in ["a", "b"] {
            f.pair.clock.advance(by: .seconds(2))
            f.open(name)
        }
        f.engine.settings.cacheLimit = 150
        #expect(f.engine.enforceCacheBudget() == 1)
        #expect(f.isHoles("a") && !f.isHoles("b"), "the least recently opened goes, in place")
        #expect(f.engine.entry(rp("a"))?.state == .notDownloaded)
    }

    @Test func withoutAMarkerRealNameActionsFailClearly() throws {
        let pair = Pair { $0.onDemand = true; $0.placeholderStyle = .realName }
        try pair.cloud.write(rp("a"), Array("one".utf8))
        pair.engine.start()
        #expect(try pair.local.metadata(of: rp("a")) == nil)
        #expect(pair.content(pair.cloud, "a") == "one")
        let error = pair.engine.status.lastError ?? ""
        #expect(error.contains("fanotify") && error.contains("a"), "\(error)")
    }
}
