import Testing
import NimbusCore
import NimbusSimulation
import NimbusVocabulary
@testable import NimbusDaemon

/// A user's chmod between Nimbus's read of a mode and its chmod lending the owner's bits (the
/// note of lent modes is written in between, two fsyncs): the chmod is the user's, kept and
/// propagated. Before, the mode lent was computed from the mode read, and the one put back
/// was the one read: the user's chmod was overwritten and never synced.
@Suite struct LentModeRaceTests {
    enum Entry: CaseIterable {
        /// The read-only folder `up` (0555) on both sides, a new file in it to upload: the
        /// user makes the cloud's `up` 0500 as Nimbus notes it.
        case folder
        /// A new read-only file `up/f` (0444), lent the write bit for its state mark once
        /// uploaded: the user makes it 0400 as Nimbus notes it.
        case file

        var side: Side { self == .folder ? .cloud : .local }
        var path: RelativePath { rp(self == .folder ? "up" : "up/f") }
        var usersMode: UInt32 { self == .folder ? 0o500 : 0o400 }

        func prepare(_ pair: UploadingPair) throws {
            switch self {
            case .folder:
                try pair.syncUpReadOnly()
                pair.clock.advance(by: .seconds(1))
                try pair.local.base.write(rp("up/d"), Array("new".utf8))
                try pair.local.base.setAttributes(rp("up"), mode: 0o555, mtime: nil)
            case .file:
                pair.local.base.checksWritePermission = true
                pair.engine.start()
                pair.clock.advance(by: .seconds(1))
                try pair.local.base.write(rp("up/f"), Array("read-only".utf8))
                try pair.local.base.setAttributes(rp("up/f"), mode: 0o444, mtime: nil)
            }
        }
    }

    @Test(arguments: Entry.allCases)
    func aChmodBeforeTheEntryIsLentIsTheUsers(_ entry: Entry) throws {
        let pair = UploadingPair(sameFilesystem: false)
        try entry.prepare(pair)
        var chmodded = false
        pair.store.afterNoteLentModes = { noted in
            guard !chmodded, noted.contains(where: { $0.side == entry.side && $0.path == entry.path }) else { return }
            chmodded = true
            try? pair.faulty(entry.side).base.setAttributes(entry.path, mode: entry.usersMode, mtime: nil)
        }
        pair.engine.sync(nil)
        #expect(chmodded, "the user's chmod came while \(entry.path) was noted")
        pair.clock.advance(by: .seconds(1))
        pair.engine.sync(nil)
        #expect(try pair.faulty(entry.side).base.metadata(of: entry.path)?.mode == entry.usersMode, "the user's mode is kept")
        #expect(try pair.faulty(entry.side.other).base.metadata(of: entry.path)?.mode == entry.usersMode, "and propagated")
        #expect(try pair.store.memory.lentModes().isEmpty, "nothing is left lent")
        if entry == .folder { #expect(try pair.cloud.base.readFile(rp("up/d"), limit: 10) == Array("new".utf8), "the new file is uploaded") }
    }
}
