import NimbusVocabulary
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon

/// A cloud whose creates cannot be exclusive on the server (an rclone mount of WebDAV): two
/// devices create the same name at the same moment and the later upload replaces the earlier
/// one without keeping it. Seen in the three-device test on rclone ("round 1 by B" nowhere).
@Suite struct BlindOverwriteTests {
    /// A pair whose cloud is written as a shared network cloud (content verified).
    func sharedPair() -> Pair {
        let pair = Pair()
        pair.engine.start()
        pair.engine.assumeCloudWriteProtocol(WriteProtocol(replace: .moveAside, create: .exclusiveOpen, verifiesContent: true))
        return pair
    }

    /// Before, the device whose upload was replaced downloaded the other version over its own:
    /// its version was then in no tree and not in the versions store.
    @Test func anUploadReplacedWithoutBeingKeptStaysAsAConflict() throws {
        let pair = sharedPair()
        try pair.local.write(rp("x.txt"), "mine\n")
        pair.sync()
        #expect(pair.content(pair.cloud, "x.txt") == "mine\n")

        // Another device's create of the same name lands on top, nothing moved aside.
        try pair.cloud.write(rp("x.txt"), "theirs\n")
        pair.sync()
        #expect(pair.content(pair.cloud, "x.txt") == "theirs\n")
        #expect(pair.content(pair.local, "x.txt") == "theirs\n")
        let copies = pair.cloud.snapshot().keys.filter { displayString($0.name).hasPrefix("x (conflict from laptop ") }
        #expect(copies.count == 1, "\(pair.cloud.snapshot().keys.map { "\($0)" })")
        #expect(copies.first.map { pair.content(pair.cloud, "\($0)") } == "mine\n")
        #expect(copies.first.map { pair.content(pair.local, "\($0)") } == "mine\n")
    }

    /// Another device that replaced the upload the Nimbus way (it moved it into the versions
    /// store first) built on it or kept it: a plain download, no conflict.
    @Test func anUploadKeptInTheVersionsStoreIsReplacedWithoutAConflict() throws {
        let pair = sharedPair()
        try pair.local.write(rp("y.txt"), "v1\n")
        pair.sync()
        let kept = VersionStore(device: "phone").location(for: rp("y.txt"), at: pair.clock.wallNow)
        try pair.engine.makeDirectories(kept.parent, in: pair.cloud)
        try pair.cloud.rename(rp("y.txt"), to: kept, replacing: false)
        try pair.cloud.write(rp("y.txt"), "v1\nv2\n")
        pair.sync()
        #expect(pair.content(pair.local, "y.txt") == "v1\nv2\n")
        #expect(!pair.cloud.snapshot().keys.contains { displayString($0.name).contains("(conflict from") })
    }

    /// An rclone mount shows other attributes for a file soon after it was uploaded: the next
    /// look sees a cloud change and downloads the same content. Before, that look forgot the
    /// upload, and a create by another device replacing it a moment later was then downloaded
    /// over this device's version: in no tree, not in the versions store.
    @Test func anUploadWhoseAttributesChangedIsStillKeptWhenReplacedBlindly() throws {
        let pair = sharedPair()
        try pair.local.write(rp("z.txt"), "mine\n")
        pair.sync()
        let uploaded = try #require(try pair.cloud.metadata(of: rp("z.txt")))
        try pair.cloud.setAttributes(rp("z.txt"), mode: nil, mtime: uploaded.mtime + 1_000_000_000)
        pair.sync()
        #expect(pair.content(pair.local, "z.txt") == "mine\n")

        try pair.cloud.write(rp("z.txt"), "theirs\n")
        pair.sync()
        #expect(pair.content(pair.cloud, "z.txt") == "theirs\n")
        let copies = pair.cloud.snapshot().keys.filter { displayString($0.name).hasPrefix("z (conflict from laptop ") }
        #expect(copies.count == 1, "\(pair.cloud.snapshot().keys.map { "\($0)" })")
        #expect(copies.first.map { pair.content(pair.cloud, "\($0)") } == "mine\n")
    }

    /// Two devices create the same name within the same second with contents of the same size,
    /// and the later upload replaces the earlier blindly. An rclone mount then shows this
    /// device the other version with the attributes it recorded for its own (same size, mtime
    /// to the second, inode by path). Before, nothing told: this device's version stayed only in
    /// its local folder, taken for synced, and the trees differed for good (SharedCloudRandomTests
    /// on rclone waited for it: "round 3 by A" here, "round 3 by B" everywhere else).
    @Test func aCreateReplacedWithTheSameAttributesIsFoundByReadingItAgain() throws {
        let pair = sharedPair()
        try pair.local.write(rp("c.txt"), "round 3 by A\n")
        pair.sync()
        let uploaded = try #require(try pair.cloud.metadata(of: rp("c.txt")))
        try pair.cloud.write(rp("c.txt"), "round 3 by B\n")
        try pair.cloud.setAttributes(rp("c.txt"), mode: nil, mtime: uploaded.mtime)
        try #require(try pair.cloud.metadata(of: rp("c.txt"))?.isUnchanged(from: uploaded) == true,
                     "the replacement must look like the upload, as on an rclone mount")
        pair.sync()
        pair.clock.advance(by: SyncEngine<MemoryFileSystem>.createCheckDelays[0])
        pair.engine.sync(Set(pair.engine.dueRetries()))
        pair.sync()
        #expect(pair.content(pair.cloud, "c.txt") == "round 3 by B\n", "the cloud's version keeps the name")
        #expect(pair.content(pair.local, "c.txt") == "round 3 by B\n")
        let copies = pair.cloud.snapshot().keys.filter { displayString($0.name).hasPrefix("c (conflict from laptop ") }
        #expect(copies.count == 1, "\(pair.cloud.snapshot().keys.map { "\($0)" })")
        #expect(copies.first.map { pair.content(pair.cloud, "\($0)") } == "round 3 by A\n")
        #expect(copies.first.map { pair.content(pair.local, "\($0)") } == "round 3 by A\n")
    }
}
