import Foundation
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
import NimbusVocabulary
@testable import NimbusDaemon

/// A local file a sync deletes is kept for the mass-delete guard's window (see
/// SyncEngine+KeptDeletions.swift), even when its name in the holding folder is taken by the
/// other kind: a folder `x` and then a file `x` deleted within the window.
@Suite struct KeptDeletionRoomTests {
    static let fileContent = "a file named like the folder was\n"

    /// A pair where `x/y.txt` (in the folder `x`, mode 0750) and then a file `x` were deleted
    /// in the cloud within one window.
    static func pairAfterBothDeletions() throws -> Pair {
        let pair = Pair()
        try pair.local.makeDirectory(rp("x"), mode: 0o750)
        try pair.local.write(rp("x/y.txt"), Array("inside the folder\n".utf8))
        try pair.local.write(rp("stays.txt"), Array("stays\n".utf8))
        pair.engine.start()
        try #require(pair.content(pair.cloud, "x/y.txt") != nil)
        try pair.cloud.removeFile(rp("x/y.txt"))
        try pair.cloud.removeDirectory(rp("x"))
        pair.sync()
        try #require(pair.local.snapshot()[rp("x")] == nil)
        try pair.cloud.write(rp("x"), Array(fileContent.utf8))
        pair.sync()
        try #require(pair.content(pair.local, "x") == fileContent)
        try pair.cloud.removeFile(rp("x"))
        pair.sync()
        try #require(pair.local.snapshot()[rp("x")] == nil)
        return pair
    }

    /// Where the local folder holds `content` (skipping temporary files).
    static func places(of content: String, in fs: MemoryFileSystem) -> [RelativePath] {
        fs.snapshot().compactMap { path, node in
            guard case .file(let bytes) = node.content, bytes == Array(content.utf8) else { return nil }
            return path
        }
    }

    @Test func aFileWhoseHoldingNameIsAFolderIsKeptInAnotherHoldingFolder() throws {
        let pair = try Self.pairAfterBothDeletions()
        let kept = Self.places(of: Self.fileContent, in: pair.local)
        #expect(kept.count == 1 && kept.allSatisfy { TemporaryName.isTemporary($0.components[0]) && $0.name == Array("x".utf8) },
                "the file x must be kept in a holding folder, not unlinked: \(kept)")
        #expect(pair.content(pair.local, RootMarkers.deletedHolding.description + "/x/y.txt") == "inside the folder\n",
                "what was kept before stays")
        #expect(pair.local.snapshot()[RootMarkers.deletedHolding.appending(rp("x"))]?.metadata.mode == 0o750,
                "the folder's stand-in has the folder's mode")
        pair.sync()
        #expect(Self.places(of: Self.fileContent, in: pair.cloud).isEmpty, "kept files are never uploaded")
        #expect(try pair.engine.listEntries(under: .root, recursive: true).map(\.path) == [rp("stays.txt")])
    }

    @Test func bothAreAdoptedAfterARestartAndGoAWindowLater() throws {
        let pair = try Self.pairAfterBothDeletions()
        let restarted = SyncEngine(local: pair.local, cloud: pair.cloud, store: pair.store, records: pair.store.committed, clock: pair.clock,
                                   settings: pair.engine.settings, log: .silent, rootNames: ("L", "C"))
        pair.clock.advance(by: .seconds(1))
        restarted.start()
        #expect(Self.places(of: Self.fileContent, in: pair.local).count == 1, "a start keeps what the holding folders hold")
        let due = try #require(restarted.nextKeptRelease)
        pair.clock.advance(by: due - pair.clock.monotonicNow)
        restarted.releaseExpiredDeletions()
        let left = pair.local.snapshot().keys.filter { $0 != RootMarkers.local }
        #expect(left == [rp("stays.txt")], "every holding folder goes once the window has passed: \(left)")
    }

    /// The same on a real disk, where a rename onto a folder or through a file fails with
    /// EEXIST or ENOTDIR.
    @Test func onDiskTheFileIsKeptInTheSecondHoldingFolder() throws {
        let pair = try DiskPair()
        try pair.plant("local/x/y.txt", "inside the folder\n")
        try pair.plant("local/stays.txt", "stays\n")
        pair.engine.start()
        try #require(pair.exists("cloud/x/y.txt"))
        try FileManager.default.removeItem(atPath: pair.root + "/cloud/x")
        pair.engine.sync(nil)
        try #require(pair.exists("local/.nimbus-tmp-deleted/x/y.txt") && !pair.exists("local/x"))
        try pair.plant("cloud/x", Self.fileContent)
        pair.engine.sync(nil)
        try #require(pair.exists("local/x"))
        try FileManager.default.removeItem(atPath: pair.root + "/cloud/x")
        pair.engine.sync(nil)
        #expect(!pair.exists("local/x"))
        #expect(try String(contentsOfFile: pair.root + "/local/.nimbus-tmp-deleted-2/x", encoding: .utf8) == Self.fileContent)
        #expect(pair.exists("local/.nimbus-tmp-deleted/x/y.txt"))
    }
}
