import Foundation
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon

/// A style switch whose conversion a taken name blocks (DESIGN §5), on the in-memory pair:
/// the whole story, in each order of events. A placeholder's bytes never reach the cloud,
/// the user's file is never lost or overwritten, both names report what they are, and the
/// conversion completes by itself once its name is free.
@Suite struct BlockedConversionEngineTests {
    typealias Fixture = RealNamePlaceholderEngineTests.Fixture

    /// Cloud `x` shown as `x.nimbus` by a suffix-style daemon, then `mine` written at `x`
    /// while no daemon ran.
    /// With `asFolder`, the user's `x` is a folder holding `x/inside`.
    func suffixPairWithXTaken(asFolder: Bool = false) throws -> Fixture {
        let f = Fixture()
        try f.pair.cloud.write(rp("x"), Array("cloud x".utf8))
        f.restarted(style: .suffix, marker: nil).start()
        #expect(f.pair.local.snapshot()[rp("x.nimbus")] != nil)
        try f.pair.local.write(rp(asFolder ? "x/inside" : "x"), Array("mine".utf8))
        return f
    }

    func realName(_ f: Fixture) -> (SyncEngine<MemoryFileSystem>, FakePlaceholderMarker) {
        let marker = FakePlaceholderMarker(local: f.pair.local, cloud: f.pair.cloud)
        return (f.restarted(style: .realName, marker: marker), marker)
    }

    func cloudNames(_ f: Fixture) -> [String] { f.pair.cloud.syncedView().keys.map(\.description).sorted() }

    /// Cloud `x` shown as a real-name placeholder, stopped cleanly (guarded), `mine` written at
    /// `x.nimbus` meanwhile; the suffix-style engine that starts next.
    func realNamePairWithXNimbusTaken() throws -> (Fixture, SyncEngine<MemoryFileSystem>) {
        let f = Fixture()
        try f.pair.cloud.write(rp("x"), Array("cloud x".utf8))
        f.engine.start()
        f.engine.guardPlaceholders()
        try f.pair.local.write(rp("x.nimbus"), Array("mine".utf8))
        return (f, f.restarted(style: .suffix, marker: nil))
    }

    /// Fails on the code before: the cloud's `x` was renamed to `x.nimbus` there (the
    /// placeholder found by its inode), and the suffix placeholder journaled as a real-name one.
    @Test func suffixToRealNamesTheUsersXIsTheNewVersionAndThePlaceholderGoes() throws {
        let f = try suffixPairWithXTaken()
        let (engine, _) = realName(f)
        engine.start()
        #expect(cloudNames(f) == ["x"], "nothing named x.nimbus reaches the cloud")
        #expect(f.pair.content(f.pair.cloud, "x") == "mine")
        #expect(try engine.versions(of: rp("x")).count == 1, "the cloud's x is kept in the versions store")
        #expect(f.pair.content(f.pair.local, "x") == "mine")
        #expect(f.pair.local.snapshot()[rp("x.nimbus")] == nil)
        #expect(engine.entry(rp("x"))?.state == .downloaded)
        #expect(engine.entry(rp("x.nimbus")) == nil)
        // (The next pass confirms the base of a file written within the last second.)
        f.pair.clock.advance(by: .seconds(1))
        engine.sync(nil)
        let written = f.pair.store.writes
        f.pair.clock.advance(by: .seconds(1))
        engine.sync(nil)
        #expect(f.pair.store.writes == written, "settled: a pass does nothing")
    }

    /// A folder the user made at `x` wins the same way: the cloud's file `x` is versioned,
    /// the folder and what it holds uploaded, the placeholder gone.
    @Test func suffixToRealNamesAFolderAtXWinsToo() throws {
        let f = try suffixPairWithXTaken(asFolder: true)
        let (engine, _) = realName(f)
        engine.start()
        #expect(cloudNames(f) == ["x", "x/inside"])
        #expect(f.pair.content(f.pair.cloud, "x/inside") == "mine")
        #expect(try engine.versions(of: rp("x")).count == 1, "the cloud's file x is kept in the versions store")
        #expect(f.pair.local.snapshot()[rp("x.nimbus")] == nil)
        #expect(engine.entry(rp("x/inside"))?.state == .downloaded)
    }

    /// Fails on the code before: the placeholder's text was uploaded as a file `x.nimbus`.
    @Test func suffixToRealNamesWithTheCloudChangedMeanwhileIsAConflictThatKeepsBoth() throws {
        let f = try suffixPairWithXTaken()
        try f.pair.cloud.write(rp("x"), Array("cloud x v2".utf8))
        let (engine, _) = realName(f)
        engine.start()
        let names = cloudNames(f)
        #expect(!names.contains("x.nimbus"), "\(names)")
        #expect(f.pair.content(f.pair.cloud, "x") == "cloud x v2")
        let copy = try #require(names.first { $0.hasPrefix("x (conflict") }, "\(names)")
        #expect(f.pair.content(f.pair.cloud, copy) == "mine" && f.pair.content(f.pair.local, copy) == "mine")
        #expect(engine.entry(rp("x"))?.state == .notDownloaded)
        for (path, node) in f.pair.cloud.snapshot() {
            guard case .file(let bytes) = node.content else { continue }
            #expect(Placeholder.parse(bytes) == nil, "\(path) holds a placeholder's text")
        }
    }

    /// The name freed before any pass settled it (the blocked start, then the user's `x`
    /// removed): the conversion completes in the next pass, nothing downloaded or uploaded;
    /// a restart after that finds nothing to convert.
    /// The user's `x` removed, or renamed to `y` (then a new file, uploaded).
    @Test(arguments: [false, true])
    func suffixToRealNamesTheConversionCompletesOnceXIsFree(_ renamed: Bool) throws {
        let f = try suffixPairWithXTaken()
        var cloudAfter = f.pair.cloud.syncedView()
        let (engine, marker) = realName(f)
        #expect(engine.preparePlaceholders() == 0, "blocked: x is the user's")
        #expect(f.pair.local.snapshot()[rp("x.nimbus")] != nil)
        if renamed {
            try f.pair.local.rename(rp("x"), to: rp("y"), replacing: false)
        } else {
            try f.pair.local.removeFile(rp("x"))
        }
        f.pair.clock.advance(by: .seconds(1))
        engine.sync(nil)
        #expect(f.isHoles("x") && marker.isPlaceholder(rp("x")))
        #expect(f.pair.local.snapshot()[rp("x.nimbus")] == nil)
        #expect(engine.entry(rp("x"))?.state == .notDownloaded)
        if renamed {
            #expect(f.pair.content(f.pair.cloud, "y") == "mine")
            cloudAfter[rp("y")] = f.pair.cloud.syncedView()[rp("y")]
        }
        #expect(f.pair.cloud.syncedView() == cloudAfter)
        let (again, _) = realName(f)
        #expect(again.preparePlaceholders() == 0)
        marker.open(rp("x")).map(engine.applyHydration)
        #expect(f.pair.content(f.pair.local, "x") == "cloud x")
    }

    /// Fails on the code before: the user's `x.nimbus` was taken for `x`'s placeholder
    /// written into and moved to a conflict name of `x`.
    @Test func realNamesToSuffixWithXNimbusTakenDownloadsXAndKeepsTheUsersFile() throws {
        let (f, suffix) = try realNamePairWithXNimbusTaken()
        suffix.start()
        #expect(f.pair.content(f.pair.local, "x.nimbus") == "mine")
        #expect(f.pair.content(f.pair.cloud, "x.nimbus") == "mine")
        #expect(f.pair.content(f.pair.local, "x") == "cloud x", "downloaded: the suffix style has no name for its placeholder")
        #expect(cloudNames(f) == ["x", "x.nimbus"] && f.pair.content(f.pair.cloud, "x") == "cloud x")
        #expect(suffix.entry(rp("x"))?.state == .downloaded)
        #expect(suffix.entry(rp("x.nimbus"))?.state == .downloaded)
        #expect(f.pair.local.snapshot().keys.allSatisfy { !$0.description.contains("conflict") })
    }

    /// `realNamePairWithXNimbusTaken`, its conversion blocked at start, then `change` and a pass.
    func blockedRealNamesToSuffix(then change: (Fixture) throws -> Void) throws -> (Fixture, SyncEngine<MemoryFileSystem>) {
        let (f, suffix) = try realNamePairWithXNimbusTaken()
        #expect(suffix.preparePlaceholders() == 0)
        try change(f)
        f.pair.clock.advance(by: .seconds(1))
        suffix.sync(nil)
        return (f, suffix)
    }

    @Test func realNamesToSuffixTheConversionCompletesOnceXNimbusIsFree() throws {
        let (f, suffix) = try blockedRealNamesToSuffix { try $0.pair.local.removeFile(rp("x.nimbus")) }
        #expect(f.pair.local.snapshot()[rp("x")] == nil)
        #expect(f.pair.content(f.pair.local, "x.nimbus").flatMap { Placeholder.parse(Array($0.utf8)) } != nil)
        #expect(suffix.entry(rp("x"))?.state == .notDownloaded)
        #expect(cloudNames(f) == ["x"] && f.pair.content(f.pair.cloud, "x") == "cloud x")
    }

    /// Fails on the code before: with the cloud's `x` deleted, the sparse `x` stayed, a
    /// placeholder no listener fills standing for nothing, until `x.nimbus` was freed or a
    /// restart converted it. It goes at the next pass, with its record.
    @Test func realNamesToSuffixWithXNimbusTakenAndXDeletedInTheCloudSettlesAtTheNextPass() throws {
        let (f, suffix) = try blockedRealNamesToSuffix { try $0.pair.cloud.removeFile(rp("x")) }
        #expect(f.pair.local.snapshot()[rp("x")] == nil, "the placeholder of a file deleted in the cloud stayed")
        #expect(suffix.entry(rp("x")) == nil)
        #expect(suffix.isPlaceholder(rp("x")) == false)
        #expect(f.pair.content(f.pair.local, "x.nimbus") == "mine")
        f.pair.clock.advance(by: .seconds(1))
        suffix.sync(nil)
        #expect(cloudNames(f) == ["x.nimbus"] && f.pair.content(f.pair.cloud, "x.nimbus") == "mine")
        #expect(f.pair.local.snapshot().keys.allSatisfy { !$0.description.contains("conflict") })
        #expect(suffix.errorCount == 0)
    }
}
