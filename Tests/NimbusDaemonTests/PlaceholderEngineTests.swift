import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon

/// On-demand mode, download, evict, pin and the cache budget on the in-memory pair
/// (DESIGN §5). The real binaries are exercised by the integration tests.
@Suite struct PlaceholderEngineTests {
    static func onDemand() -> Pair { Pair { $0.onDemand = true } }

    func placeholderInfo(_ pair: Pair, _ path: String) -> (size: Int64, name: String)? {
        guard let file = pair.content(pair.local, path + ".nimbus") else { return nil }
        return Placeholder.parse(Array(file.utf8))
    }

    @Test func newCloudFilesAppearAsPlaceholdersWithTheirSizeAndState() throws {
        let pair = Self.onDemand()
        try pair.cloud.write(rp("a.txt"), Array("twelve bytes".utf8))
        try pair.cloud.write(rp("d/b.txt"), Array("x".utf8))
        pair.engine.start()
        #expect(pair.content(pair.local, "a.txt") == nil, "nothing is downloaded in on-demand mode")
        #expect(placeholderInfo(pair, "a.txt")?.size == 12)
        #expect(placeholderInfo(pair, "d/b.txt")?.name == "b.txt")
        #expect(try pair.local.extendedAttribute(Placeholder.stateAttribute, of: rp("a.txt.nimbus")) == Array("notDownloaded".utf8))
        #expect(try pair.local.extendedAttribute(Placeholder.sizeAttribute, of: rp("a.txt.nimbus")) == Array("12".utf8))
        let entry = try #require(pair.engine.entry(rp("a.txt")))
        #expect(entry.state == .notDownloaded)
        #expect(entry.size == 12)
        #expect(try pair.engine.listEntries(under: .root, recursive: true).map(\.path.description) == ["a.txt", "d", "d/b.txt"])
        // A second pass finds nothing to do: the placeholder equals its base.
        let before = pair.store.writes
        pair.sync()
        #expect(pair.store.writes == before)
    }

    @Test func aCloudChangeRewritesThePlaceholderWithoutDownloading() throws {
        let pair = Self.onDemand()
        try pair.cloud.write(rp("a"), Array("one".utf8))
        pair.engine.start()
        try pair.cloud.write(rp("a"), Array("a longer version".utf8))
        pair.sync()
        #expect(placeholderInfo(pair, "a")?.size == 16)
        #expect(pair.content(pair.local, "a") == nil)
        #expect(pair.content(pair.cloud, "a") == "a longer version", "the placeholder must never be uploaded")
    }

    @Test func renamingOrDeletingAPlaceholderRenamesOrDeletesTheCloudFile() throws {
        let pair = Self.onDemand()
        try pair.cloud.write(rp("a"), Array("one".utf8))
        try pair.cloud.write(rp("b"), Array("two".utf8))
        pair.engine.start()
        try pair.local.rename(rp("a.nimbus"), to: rp("renamed.nimbus"), replacing: false)
        try pair.local.removeFile(rp("b.nimbus"))
        pair.sync()
        #expect(pair.content(pair.cloud, "renamed") == "one")
        #expect(pair.content(pair.cloud, "a") == nil)
        #expect(pair.content(pair.cloud, "b") == nil)
        #expect(try pair.engine.versions(of: rp("b")).count == 1, "the deleted content is kept in the versions store")
        #expect(pair.engine.entry(rp("renamed"))?.state == .notDownloaded)
    }

    @Test func aDownloadReplacesThePlaceholderAndLaterChangesAreDownloaded() throws {
        let pair = Self.onDemand()
        try pair.cloud.write(rp("d/a"), Array("one".utf8))
        pair.engine.start()
        let entry = try pair.engine.download(rp("d"), .explicit)
        #expect(entry?.path == rp("d"))
        #expect(pair.content(pair.local, "d/a") == "one")
        #expect(pair.content(pair.local, "d/a.nimbus") == nil)
        #expect(pair.engine.entry(rp("d/a"))?.state == .downloaded)
        #expect(try pair.local.extendedAttribute(Placeholder.stateAttribute, of: rp("d/a")) == Array("downloaded".utf8))
        try pair.cloud.write(rp("d/a"), Array("two".utf8))
        pair.sync()
        #expect(pair.content(pair.local, "d/a") == "two", "a downloaded file stays downloaded")
    }

    /// `tar x` replaces files by symlinks: writing the state of one fails (`EPERM`, reported as
    /// `EOPNOTSUPP`), which is that entry's problem; the other files still get their state.
    @Test func oneSymlinkWithoutXattrsDoesNotSwitchTheStateOffForEveryFile() throws {
        let pair = Pair()
        try pair.local.makeSymlink(rp("link"), target: Array("d".utf8))
        pair.engine.start()
        pair.engine.markState(.downloaded, of: rp("link"))
        try pair.cloud.write(rp("after"), Array("one".utf8))
        pair.sync()
        #expect(pair.content(pair.local, "after") == "one")
        #expect(try pair.local.extendedAttribute(Placeholder.stateAttribute, of: rp("after")) == Array("downloaded".utf8))
    }

    @Test func theStateXattrFollowsConflictsAndTheirResolution() throws {
        let pair = Pair()
        try pair.local.write(rp("a"), Array("one".utf8))
        pair.engine.start()
        #expect(try pair.local.extendedAttribute(Placeholder.stateAttribute, of: rp("a")) == Array("downloaded".utf8))
        try pair.local.write(rp("a"), Array("local edit".utf8))
        try pair.cloud.write(rp("a"), Array("cloud edit".utf8))
        pair.sync()
        #expect(pair.engine.entry(rp("a"))?.state == .conflict)
        #expect(try pair.local.extendedAttribute(Placeholder.stateAttribute, of: rp("a")) == Array("conflict".utf8))
        try pair.engine.resolve(rp("a"), keep: .cloud)
        #expect(try pair.local.extendedAttribute(Placeholder.stateAttribute, of: rp("a")) == Array("downloaded".utf8))
    }

    @Test func evictRefusesAModifiedOrPinnedFileAndKeepsTheContentInTheCloud() throws {
        let pair = Pair()  // mirror mode: evicted files must stay placeholders there too
        try pair.local.write(rp("a"), Array("one".utf8))
        try pair.local.write(rp("b"), Array("two".utf8))
        pair.engine.start()
        try pair.local.write(rp("a"), Array("changed".utf8))
        #expect(throws: EngineRequestError.self) { try pair.engine.evict(rp("a")) }
        #expect(pair.content(pair.local, "a") == "changed")
        _ = try pair.engine.pin(rp("b"))
        let pinned = #expect(throws: EngineRequestError.self) { try pair.engine.evict(rp("b")) }
        #expect(pinned?.kind == .pinned)
        _ = try pair.engine.unpin(rp("b"))
        #expect(try pair.engine.evict(rp("b.nimbus"))?.state == .notDownloaded, "the placeholder's name names the file")
        #expect(pair.content(pair.local, "b") == nil)
        #expect(pair.content(pair.cloud, "b") == "two")
        try pair.cloud.write(rp("b"), Array("three".utf8))
        pair.sync()
        #expect(pair.content(pair.local, "b") == nil, "an evicted file is not downloaded again by a cloud change")
        #expect(placeholderInfo(pair, "b")?.size == 5)
        #expect(pair.engine.entry(rp("b"))?.residency == .evicted)
        #expect(try pair.engine.pin(rp("b"))?.state == .downloaded, "pinning a placeholder downloads it")
        #expect(pair.content(pair.local, "b") == "three")
    }

    @Test func newFilesInAPinnedFolderAreDownloaded() throws {
        let pair = Self.onDemand()
        try pair.cloud.write(rp("keep/a"), Array("one".utf8))
        try pair.cloud.write(rp("other/b"), Array("two".utf8))
        pair.engine.start()
        _ = try pair.engine.pin(rp("keep"))
        #expect(pair.content(pair.local, "keep/a") == "one")
        try pair.cloud.write(rp("keep/c"), Array("three".utf8))
        pair.sync()
        #expect(pair.content(pair.local, "keep/c") == "three")
        #expect(pair.content(pair.local, "other/b") == nil)
    }

    @Test func theCacheBudgetEvictsTheLeastRecentlyOpenedFirst() throws {
        let pair = Self.onDemand()
        for name in ["a", "b", "c"] { try pair.cloud.write(rp(name), Array(repeating: 1, count: 100)) }
        pair.engine.start()
        for name in ["a", "b", "c"] {
            pair.clock.advance(by: .seconds(2))
            _ = try pair.engine.download(rp(name), .explicit)
        }
        pair.engine.settings.cacheLimit = 1 << 20
        // Opened in the order c, a, b: c is the least recently used now.
        for name in ["c", "a", "b"] {
            pair.clock.advance(by: .seconds(2))
            pair.engine.noteOpened(rp(name))
        }
        pair.engine.settings.cacheLimit = 150
        #expect(pair.engine.enforceCacheBudget() == 2)
        #expect(pair.content(pair.local, "c") == nil)
        #expect(pair.content(pair.local, "a") == nil)
        #expect(pair.content(pair.local, "b") != nil, "the most recently opened file stays")
        #expect(pair.content(pair.cloud, "c") != nil)
    }

    @Test func anAutomaticDownloadKeepsMinFreeSpace() throws {
        let clock = ManualClock()
        let local = MemoryFileSystem(time: clock.timeSource, capacity: 100 << 20, device: 1)
        let cloud = MemoryFileSystem(time: clock.timeSource, temporaryDirectory: RootMarkers.temporary(for: "laptop"), device: 2)
        var settings = EngineSettings(deviceName: "laptop")
        settings.copyThreads = 1  // As `Pair`: memory filesystems replay in order.
        settings.onDemand = true
        settings.minFreeSpace = 90 << 20
        let engine = SyncEngine(local: local, cloud: cloud, store: MemoryRecordStore(), records: [:], clock: clock,
                                settings: settings, log: .silent, rootNames: ("L", "C"))
        try cloud.write(rp("big"), Array(repeating: 7, count: 20 << 20))
        engine.start()
        let refused = #expect(throws: EngineRequestError.self) { try engine.download(rp("big"), .automatic) }
        #expect(refused?.kind == .noSpace)
        #expect(refused?.message.contains("min-free-space") == true)
        if case .error = engine.entry(rp("big"))?.state {} else { Issue.record("the refused path must show the error state") }
        #expect(try local.metadata(of: rp("big")) == nil)
        // A person's request may go below min-free-space.
        #expect(try engine.download(rp("big"), .explicit)?.state == .downloaded)
    }

    @Test func aStrayPlaceholderIsAdoptedAndARealFileBesideItWins() throws {
        let pair = Self.onDemand()
        try pair.cloud.write(rp("a"), Array("cloud".utf8))
        // A placeholder nobody tracks (a lost journal): it is replaced, not uploaded.
        let cloudFile = try #require(try pair.cloud.metadata(of: rp("a")))
        try pair.local.write(rp("a.nimbus"), Placeholder.contents(for: rp("a"), cloud: cloudFile))
        pair.engine.start()
        #expect(pair.engine.entry(rp("a"))?.state == .notDownloaded)
        #expect(pair.content(pair.cloud, "a.nimbus") == nil)
        // The real file appears beside the placeholder (a download finished before a crash).
        try pair.local.write(rp("a"), Array("cloud".utf8))
        pair.sync()
        #expect(pair.content(pair.local, "a.nimbus") == nil)
        #expect(pair.content(pair.local, "a") == "cloud")
        #expect(pair.content(pair.cloud, "a") == "cloud")
    }

    /// A download that put the whole file in place and removed the placeholder just before a
    /// crash, before the journal said so: the file is adopted as in sync, not uploaded again.
    @Test func aDownloadedFileWhosePlaceholderIsGoneIsAdoptedNotUploaded() throws {
        let pair = Self.onDemand()
        try pair.cloud.write(rp("a"), Array("cloud".utf8))
        pair.engine.start()
        #expect(pair.engine.entry(rp("a"))?.state == .notDownloaded)
        let cloudBefore = try #require(try pair.cloud.metadata(of: rp("a")))
        try pair.local.write(rp("a"), Array("cloud".utf8))
        try pair.local.removeFile(rp("a.nimbus"))
        pair.sync()
        #expect(pair.content(pair.local, "a") == "cloud" && pair.content(pair.local, "a.nimbus") == nil)
        #expect(try pair.cloud.metadata(of: rp("a"))?.inode == cloudBefore.inode, "the identical file was uploaded again")
        #expect(pair.engine.entry(rp("a"))?.state == .downloaded)
        // Different content in its place is a change made here: it is uploaded.
        try pair.local.write(rp("a"), Array("edited here".utf8))
        pair.sync()
        #expect(pair.content(pair.cloud, "a") == "edited here")
    }
}
