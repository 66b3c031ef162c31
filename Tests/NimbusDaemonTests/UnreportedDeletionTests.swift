import Testing
import NimbusCore
import NimbusSimulation
import NimbusVocabulary
@testable import NimbusDaemon

/// A rename that races a look (`SyncEngine.holdUnreportedDeletions`): a look at `big`, brought
/// by an event of the engine's own write, comes just after a program renamed `big`, before the
/// rename's events. Two passes over the memory pair, as the runtime makes them: the look, then
/// the batch with the rename's events.
@Suite struct UnreportedDeletionTests {
    /// A pair with `big` synced, and its cloud inode.
    func syncedPair() throws -> (Pair, UInt64) {
        let pair = Pair()
        try pair.local.write(rp("big"), Array("a hundred megabytes".utf8))
        pair.engine.start()
        let inode = try #require(try pair.cloud.metadata(of: rp("big"))?.inode)
        return (pair, inode)
    }

    @Test func aRenameSeenFirstAsAGoneFileIsStillARename() throws {
        let (pair, cloudInode) = try syncedPair()
        try pair.local.rename(rp("big"), to: rp("renamed"), replacing: false)
        pair.clock.advance(by: .milliseconds(10))
        pair.engine.sync([rp("big")], reportedGone: [])
        #expect(pair.content(pair.cloud, "big") != nil, "the look alone does not delete what nothing reported gone")
        #expect(pair.engine.nextRetry != nil, "it is looked at again if no event explains it")
        // The rename's events: both names.
        pair.engine.sync([rp("big"), rp("renamed")], reportedGone: [])
        #expect(try pair.cloud.metadata(of: rp("big")) == nil)
        #expect(try pair.cloud.metadata(of: rp("renamed"))?.inode == cloudInode, "renamed in the cloud, not copied")
        #expect(pair.content(pair.cloud, "renamed") == "a hundred megabytes")
        #expect(pair.engine.tables.deletionsAwaitingEvents.isEmpty)
    }

    @Test func aDeletionNothingExplainsGoesAheadWhenLookedAtAgain() throws {
        let (pair, _) = try syncedPair()
        try pair.local.removeFile(rp("big"))
        pair.engine.sync([rp("big")], reportedGone: [])
        #expect(pair.content(pair.cloud, "big") != nil)
        pair.clock.advance(by: SyncEngine<MemoryFileSystem>.unreportedDeletionWait)
        let due = pair.engine.dueRetries()
        #expect(due == [rp("big")], "looked at again after the wait")
        pair.engine.sync(due, reportedGone: [])
        #expect(try pair.cloud.metadata(of: rp("big")) == nil, "held once, not for ever")
        #expect(pair.engine.tables.deletionsAwaitingEvents.isEmpty)
    }

    @Test func aReportedDeletionOrAFullScanDoesNotWait() throws {
        let (pair, _) = try syncedPair()
        try pair.local.write(rp("d/inside"), Array("x".utf8))
        try pair.local.write(rp("other"), Array("y".utf8))
        pair.sync()
        try pair.local.removeFile(rp("big"))
        pair.engine.sync([rp("big")], reportedGone: [rp("big")])
        #expect(try pair.cloud.metadata(of: rp("big")) == nil, "reported: deleted at once")
        // A folder moved away is reported as the folder; what was inside goes with it.
        try pair.local.removeFile(rp("d/inside"))
        try pair.local.removeDirectory(rp("d"))
        pair.engine.sync([rp("d")], reportedGone: [rp("d")])
        #expect(try pair.cloud.metadata(of: rp("d")) == nil)
        try pair.local.removeFile(rp("other"))
        pair.engine.sync([rp("other")])
        #expect(try pair.cloud.metadata(of: rp("other")) == nil, "no report given (nimbusctl sync, tests): as before")
        #expect(pair.engine.nextRetry == nil)
    }

    /// The other way round: a file gone from the cloud (renamed by another device through a
    /// mount), looked at before its events, keeps its local copy until they come.
    @Test func aCloudRenameSeenFirstAsAGoneFileIsStillARename() throws {
        let (pair, _) = try syncedPair()
        let localInode = try #require(try pair.local.metadata(of: rp("big"))?.inode)
        try pair.cloud.rename(rp("big"), to: rp("renamed"), replacing: false)
        pair.engine.sync([rp("big")], reportedGone: [])
        #expect(pair.content(pair.local, "big") != nil)
        pair.engine.sync([rp("renamed")], reportedGone: [])
        #expect(try pair.local.metadata(of: rp("renamed"))?.inode == localInode && pair.content(pair.local, "big") == nil)
    }
}
