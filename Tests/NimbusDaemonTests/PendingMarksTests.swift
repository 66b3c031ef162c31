import Foundation
import Testing
import NimbusCore
import NimbusJournal
import NimbusSimulation
import NimbusSystem
import NimbusTestSupport
import NimbusVocabulary
@testable import NimbusDaemon

/// The uploaded files' state marks, written after the pass's commit (`SyncEngine+PendingMarks`,
/// issue 15): after READY=1 for the first pass, at a stop if still pending, and again at the
/// next start when a crash may have lost them.
@Suite struct PendingMarksTests {
    static let files = ["a", "d/b", "d/e/c"]

    static func mark(_ pair: MemoryRuntime, _ path: String) -> String? {
        (try? pair.local.extendedAttribute(Placeholder.stateAttribute, of: rp(path)))?.map { String(decoding: $0, as: UTF8.self) }
    }

    static func withFiles() throws -> MemoryRuntime {
        let pair = MemoryRuntime()
        for path in files { try pair.local.write(rp(path), "content of \(path)") }
        return pair
    }

    @Test func theFirstPassMarksItsUploadsAtTheFirstTurnAfterBegin() throws {
        let pair = try Self.withFiles()
        let runtime = pair.runtime
        runtime.begin()
        defer { runtime.finish() }
        for path in Self.files {
            #expect(pair.content(pair.cloud, path) == "content of \(path)", "\(path) is uploaded when begin returns")
            #expect(Self.mark(pair, path) == nil, "\(path) is marked after READY=1, not inside the pass")
        }
        #expect(pair.store.committedMarksNote, "the commit notes that marks are pending")
        #expect(runtime.step())
        for path in Self.files { #expect(Self.mark(pair, path) == "downloaded", "\(path)") }
        #expect(!runtime.engine.store.marksMayBeMissing, "the note is cleared once they are written")
    }

    @Test func aStopWritesTheMarksTheFirstPassLeftPending() throws {
        let pair = try Self.withFiles()
        pair.runtime.begin()
        pair.runtime.finish()
        for path in Self.files { #expect(Self.mark(pair, path) == "downloaded", "\(path)") }
        #expect(!pair.store.committedMarksNote, "the stop's commit clears the note")
    }

    /// A crash after the first pass's commit, before its marks: the next start marks the files
    /// again, although its own pass has nothing to copy.
    @Test func aStartAfterACrashThatLostTheMarksWritesThemAgain() throws {
        let pair = try Self.withFiles()
        pair.runtime.begin()
        // The crash: the runtime's loop never turns, nothing more is committed.
        pair.watcher(.local)?.close()
        pair.watcher(.cloud)?.close()
        pair.store.dropPending()
        for path in Self.files { #expect(Self.mark(pair, path) == nil, "\(path) lost its mark in the crash") }
        #expect(pair.store.committedMarksNote)
        pair.restart()
        let runtime = pair.runtime
        runtime.begin()
        defer { runtime.finish() }
        #expect(runtime.step())
        for path in Self.files { #expect(Self.mark(pair, path) == "downloaded", "\(path) is marked again") }
    }

    /// A later pass marks its uploads before `sync` returns, after its commit.
    @Test func aLaterPassMarksItsUploadsAfterItsCommit() throws {
        let pair = MemoryRuntime()
        let runtime = pair.runtime
        runtime.begin()
        defer { runtime.finish() }
        try pair.local.write(rp("new"), "one")
        runtime.engine.sync([rp("new")])
        #expect(Self.mark(pair, "new") == "downloaded")
        #expect(pair.store.committedMarksNote && !pair.store.marksMayBeMissing,
                "noted with the pass's commit, cleared with the next one")
    }

    /// Each mark written is reported back by inotify (`IN_ATTRIB`): that echo alone brings no
    /// pass over the file, but a change the user made meanwhile, which inotify may have merged
    /// into the echo, still does (`SyncEngine+Echoes`).
    @Test func theEchoOfAMarkBringsNoPassButAChangeMergedIntoItDoes() throws {
        let pair = try Self.withFiles()
        // Files written well before the pass, as a user's usually are: their records are not
        // ambiguous, which would make any event worth a look.
        pair.clock.advance(by: .seconds(1))
        let runtime = pair.runtime
        runtime.begin()
        defer { runtime.finish() }
        #expect(runtime.step())
        for path in Self.files { #expect(Self.mark(pair, path) == "downloaded", "\(path)") }
        // Paused, the runtime takes events in but starts no pass: its batcher shows the hints.
        runtime.setPaused(true)
        try pair.local.setAttributes(rp("d/e/c"), mode: 0o600, mtime: nil)
        let echo = { (path: String) in WatchEvent(.attributesChanged, rp(path), isDirectory: false) }
        pair.watcher(.local)?.push(Self.files.map(echo))
        try pair.stepUntil("the events are taken in") { runtime.batcher.batcher.nextDeadline != nil }
        pair.clock.advance(by: runtime.options.quietPeriod * 2)
        #expect(runtime.batcher.batcher.take(now: pair.clock.monotonicNow) == .paths([rp("d/e/c")]),
                "only the file whose mode changed is looked at again")
        try pair.local.setAttributes(rp("a"), mode: nil, mtime: 12_345)
        pair.watcher(.local)?.push([echo("a")])
        try pair.stepUntil("the second event is taken in") { runtime.batcher.batcher.nextDeadline != nil }
        pair.clock.advance(by: runtime.options.quietPeriod * 2)
        #expect(runtime.batcher.batcher.take(now: pair.clock.monotonicNow) == .paths([rp("a")]),
                "a file touched after its mark is looked at again")
    }

    /// The note survives a reopen of the journal, and so does its removal.
    @Test func theJournalKeepsTheNoteAcrossAReopen() throws {
        let folder = try TemporaryDirectory.make("nimbus-marks")
        defer { TemporaryDirectory.remove(folder, label: "theJournalKeepsTheNoteAcrossAReopen") }
        let directory = SystemPath(folder).appending("journal")
        do {
            let (store, _) = try JournalRecordStore.open(directory: directory)
            #expect(!store.marksMayBeMissing)
            store.put(rp("a"), PathRecord(base: BaseEntry(local: FileMetadata(kind: .file, size: 1, mtime: 1, mode: 0o644),
                                                          cloud: FileMetadata(kind: .file, size: 1, mtime: 1, mode: 0o644))))
            store.marksMayBeMissing = true
            try store.commit()
            try store.close()
        }
        do {
            let (store, records) = try JournalRecordStore.open(directory: directory)
            #expect(store.marksMayBeMissing && records.keys.sorted() == [rp("a")], "the note is no path")
            store.marksMayBeMissing = false
            try store.commit()
            try store.close()
        }
        let (store, _) = try JournalRecordStore.open(directory: directory)
        #expect(!store.marksMayBeMissing)
        try store.close()
    }
}
