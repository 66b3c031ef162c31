import Testing
import NimbusCore
import NimbusSimulation
import NimbusVocabulary
@testable import NimbusDaemon

/// What a pass of single actions in a read-only folder costs in flushes (issue 15): the note
/// of lent modes written once for the folder and removed once for the pass, the modes put
/// back flushed together with the names, once. Before, each action wrote the note, fsynced
/// the folder's mode and removed the note: four fsyncs a rename.
@Suite struct ReadOnlyFolderFlushTests {
    @Test func renamesInAReadOnlyFolderShareOneNoteAndOneFlush() throws {
        let pair = UploadingPair(sameFilesystem: false)
        try pair.syncUpReadOnly()
        pair.clock.advance(by: .seconds(1))
        for name in UploadingPair.names { try pair.local.base.rename(rp("up/\(name)"), to: rp("up/\(name)2"), replacing: false) }
        let start = pair.trace.all.count
        pair.engine.sync(nil)
        let pass = Array(pair.trace.all.dropFirst(start))
        for name in UploadingPair.names { #expect(try pair.cloud.base.metadata(of: rp("up/\(name)2")) != nil, "\(name) renamed") }
        #expect(try pair.cloud.base.metadata(of: rp("up"))?.mode == 0o555, "the folder has its mode back")
        #expect(try pair.store.memory.lentModes().isEmpty, "and is no longer noted")

        let notes = pass.indices.filter { pass[$0].actor == "journal" && pass[$0].operation == "noteLentModes" }
        #expect(notes.map { pass[$0].paths } == [[rp("up")], []], "the note written once, removed once: \(notes.map { pass[$0] })")
        let flushes = pass.indices.filter { pass[$0].actor == "cloud" && pass[$0].operation == "synchronize" }
        #expect(flushes.count == 1, "one flush of the cloud folder for the pass")
        let lastChange = try #require(pass.lastIndex { $0.actor == "cloud" && ["rename", "setAttributes"].contains($0.operation) })
        let commit = try #require(pass.firstIndex { $0.actor == "journal" && $0.operation == "commit" })
        let flush = try #require(flushes.first)
        let removal = try #require(notes.last)
        #expect(lastChange < flush && flush < removal && flush < commit,
                "renames and modes, then the flush, then the note removed and the journal committed: \(pass.filter { $0.operation != "metadata" })")
    }
}
