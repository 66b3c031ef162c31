import Foundation
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
import NimbusTestSupport
import NimbusVocabulary
@testable import NimbusDaemon

/// A power cut while Nimbus has lent a recorded read-only folder its owner's write and search
/// bits (`SyncEngine+FolderModes`): the folder must not come back with the lent mode taken for
/// the user's, which the next pass would propagate to the other side. Every step of the pass
/// is tried as the moment of the crash, on the side being written to. Before the note of lent
/// modes (`SyncEngine+LentModes`), 0755 reached both sides after most of them.
@Suite struct LentModeCrashTests {
    /// The pair after a first sync of read-only folders `d` (0555, holding `d/a` and `d/b`)
    /// and `e` (0555, holding `e/c`). Both sides check write permission, as for a daemon
    /// without CAP_DAC_OVERRIDE; changes on the source side are made as root (`editSource`).
    struct CrashingPair {
        let clock = ManualClock()
        let store = MemoryRecordStore()
        let localDisk: MemoryFileSystem
        let cloudDisk: MemoryFileSystem
        let direction: ReadOnlyFolderEngineTests.Direction
        var local: FaultyFileSystem<MemoryFileSystem>
        var cloud: FaultyFileSystem<MemoryFileSystem>
        var engine: SyncEngine<FaultyFileSystem<MemoryFileSystem>>

        init(_ direction: ReadOnlyFolderEngineTests.Direction) throws {
            self.direction = direction
            localDisk = MemoryFileSystem(time: clock.timeSource, device: 1)
            cloudDisk = MemoryFileSystem(time: clock.timeSource, temporaryDirectory: RootMarkers.temporary(for: "sim"), device: 2)
            (local, cloud) = (FaultyFileSystem(localDisk), FaultyFileSystem(cloudDisk))
            engine = SimulationRun.makeEngine(local, cloud, store, clock, onDemand: false, style: .suffix, marker: nil)
            let source = direction == .upload ? localDisk : cloudDisk
            for name in ["d/a", "d/b", "e/c"] { try source.write(rp(name), Array(name.utf8)) }
            try source.setAttributes(rp("d"), mode: 0o555, mtime: nil)
            try source.setAttributes(rp("e"), mode: 0o555, mtime: nil)
            localDisk.checksWritePermission = true
            cloudDisk.checksWritePermission = true
            engine.start()
        }

        var source: MemoryFileSystem { direction == .upload ? localDisk : cloudDisk }
        var target: MemoryFileSystem { direction == .upload ? cloudDisk : localDisk }
        var targetSide: Side { direction == .upload ? .cloud : .local }
        func faulty(_ side: Side) -> FaultyFileSystem<MemoryFileSystem> { side == .local ? local : cloud }

        /// A change on the source side, made as root (or the user's other device) would.
        func editSource(_ change: (MemoryFileSystem) throws -> Void) throws {
            try ReadOnlyFolderEngineTests.asRoot(source) { try change(source) }
            clock.advance(by: .seconds(1))
        }

        /// A new engine on the same disks and journal, as a new process after a crash.
        mutating func restart() {
            store.dropPending()
            (local, cloud) = (FaultyFileSystem(localDisk), FaultyFileSystem(cloudDisk))
            engine = SimulationRun.makeEngine(local, cloud, store, clock, onDemand: false, style: .suffix, marker: nil)
            engine.start()
        }

        func mode(_ disk: MemoryFileSystem, _ path: String) -> UInt32? { try? disk.metadata(of: rp(path))?.mode }

        func mark(_ path: String) -> String? {
            (try? localDisk.extendedAttribute(Placeholder.stateAttribute, of: rp(path)))?.map { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// What changes on the source side, each needing writes into read-only folders on the target.
    enum Change: CaseIterable {
        /// A deletion in `d`, and a file new in it: copied alone.
        case deletionAndNewFile
        /// The same with six new files: copied as a batch, `d` lent until it is installed.
        case deletionAndNewFiles
        /// `d` (0555) moved into `e` (0555): `d`, `e` and the root's entry change.
        case folderMovedIntoAnother

        func make(on disk: MemoryFileSystem) throws {
            switch self {
            case .deletionAndNewFile, .deletionAndNewFiles:
                try disk.removeFile(rp("d/a"))
                for index in 0..<(self == .deletionAndNewFile ? 1 : 6) {
                    try disk.write(rp("d/new\(index)"), Array("new \(index)".utf8))
                }
                try disk.setAttributes(rp("d"), mode: 0o555, mtime: nil)
            case .folderMovedIntoAnother:
                try disk.rename(rp("d"), to: rp("e/d"), replacing: false)
            }
        }

        /// The read-only folders written into, where they end.
        var folders: [String] { self == .folderMovedIntoAnother ? ["e", "e/d"] : ["d"] }
    }

    @Test(arguments: ReadOnlyFolderEngineTests.Direction.allCases, Change.allCases)
    func aCrashWhileARecordedFolderIsLentLeavesTheUsersModeOnBothSides(_ direction: ReadOnlyFolderEngineTests.Direction,
                                                                      change: Change) throws {
        var crashesWhileLent = 0
        for operations in 0..<500 {
            var pair = try CrashingPair(direction)
            try pair.editSource(change.make)
            pair.faulty(pair.targetSide).crash(afterOperations: operations)
            pair.engine.sync(nil)
            guard pair.faulty(pair.targetSide).isCrashed else { break }  // Every step has been the crash's.
            let lent = ["d", "e", "e/d"].filter { pair.mode(pair.target, $0) == 0o755 }
            if !lent.isEmpty { crashesWhileLent += 1 }

            pair.restart()
            pair.clock.advance(by: .seconds(1))
            pair.engine.sync(nil)
            let label = "\(direction), \(change), crash after \(operations) operations on the target (lent then: \(lent))"
            for folder in change.folders {
                #expect(pair.mode(pair.source, folder) == 0o555, "\(label): \(folder) keeps the user's mode on the source")
                #expect(pair.mode(pair.target, folder) == 0o555, "\(label): \(folder) has the user's mode again on the target")
                #expect(pair.engine.entry(rp(folder))?.state == .downloaded, "\(label): \(folder)")
            }
            let inside = { (view: [RelativePath: String]) in view.filter { rp("d").contains($0.key) || rp("e").contains($0.key) } }
            #expect(inside(pair.target.syncedView()) == inside(pair.source.syncedView()), "\(label): both sides agree")
            #expect(pair.store.lentNote.isEmpty, "\(label): nothing is lent once the pass is over")
        }
        #expect(crashesWhileLent > 0, "some crash struck while a folder was lent 0755")
    }

    /// A read-only file lent its owner's write bit for its state mark (`SyncEngine+StateMarks`):
    /// after a crash at any step of the pass that syncs it, on the local side, it is 0444 on
    /// both sides, with its mark. Uploaded, the file itself is lent the bit (after the commit);
    /// downloaded, its temporary file before it takes its name.
    @Test(arguments: ReadOnlyFolderEngineTests.Direction.allCases)
    func aCrashWhileAReadOnlyFileIsLentForItsMarkLeavesItsMode(_ direction: ReadOnlyFolderEngineTests.Direction) throws {
        var crashesWhileLent = 0
        for operations in 0..<500 {
            var pair = try CrashingPair(direction)
            try pair.editSource {
                try $0.write(rp("f"), Array("read-only".utf8))
                try $0.setAttributes(rp("f"), mode: 0o444, mtime: nil)
            }
            pair.local.crash(afterOperations: operations)
            pair.engine.sync(nil)
            guard pair.local.isCrashed else { break }  // Every step has been the crash's.
            if pair.mode(pair.localDisk, "f") == 0o644 { crashesWhileLent += 1 }

            pair.restart()
            pair.clock.advance(by: .seconds(1))
            pair.engine.sync(nil)
            let label = "\(direction), crash after \(operations) operations on the local side"
            #expect(pair.mode(pair.localDisk, "f") == 0o444 && pair.mode(pair.cloudDisk, "f") == 0o444, "\(label): f keeps its mode")
            #expect(pair.mark("f") == "downloaded", "\(label): f has its mark")
            #expect(pair.store.lentNote.isEmpty, "\(label): nothing is lent once the pass is over")
        }
        #expect(crashesWhileLent > 0 || direction == .download, "some crash struck while f was lent 0644")
    }

    /// A mode a pass sets (a chmod propagated, a folder's mode set back) is durable before
    /// the journal's commit that records it: lost in a crash under a record that says it was
    /// made, the old mode would be taken for a change back and propagated. Before, nothing
    /// flushed it (only a batch of copies flushes its folders).
    @Test(arguments: [("up/a", UInt32(0o444)), ("up", UInt32(0o555))])
    func aModeSetByAPassIsDurableBeforeTheCommitThatRecordsIt(_ path: String, mode: UInt32) throws {
        let pair = UploadingPair(sameFilesystem: false)
        pair.engine.start()
        pair.clock.advance(by: .seconds(1))
        try pair.local.base.setAttributes(rp(path), mode: mode, mtime: nil)
        let (flushed, commits) = (pair.cloud.calls(.synchronize), pair.store.flushesAtCommits.count)
        pair.engine.sync(nil)
        #expect(try pair.cloud.base.metadata(of: rp(path))?.mode == mode)
        let commit = try #require(pair.store.flushesAtCommits.dropFirst(commits).first, "the mode is recorded")
        #expect(commit.cloud > flushed, "the cloud folder was flushed after the chmod, before the commit")
    }

    /// A mode set by the user while the folder was lent (here after the crash, before the
    /// start) is theirs: the start leaves it, and it reaches the other side.
    @Test func aModeTheUserSetMeanwhileIsLeftAndPropagated() throws {
        // The first crash that strikes while `d` is lent.
        var pair = try CrashingPair(.download)
        for operations in 0..<100 {
            pair = try CrashingPair(.download)
            try pair.editSource(Change.deletionAndNewFile.make)
            pair.local.crash(afterOperations: operations)
            pair.engine.sync(nil)
            if pair.mode(pair.target, "d") == 0o755 { break }
        }
        #expect(pair.mode(pair.target, "d") == 0o755 && !pair.store.lentNote.isEmpty, "the crash left d lent")
        try pair.target.setAttributes(rp("d"), mode: 0o700, mtime: nil)
        pair.restart()
        #expect(pair.mode(pair.target, "d") == 0o700, "the user's mode is left")
        #expect(pair.mode(pair.source, "d") == 0o700, "and propagated as any change of theirs")
        #expect(pair.store.lentNote.isEmpty)
    }

    /// The note is a file beside the journal: it survives a reopen, and an empty one is removed.
    @Test func theJournalKeepsTheNoteOfLentModesAcrossAReopen() throws {
        let folder = try TemporaryDirectory.make("nimbus-lent")
        defer { TemporaryDirectory.remove(folder, label: "theJournalKeepsTheNoteOfLentModesAcrossAReopen") }
        let directory = SystemPath(folder).appending("journal")
        let entries = [LentMode(side: .cloud, path: rp("photos/2019"), inode: 1 << 40, mode: 0o555, working: 0o755),
                       LentMode(side: .local, path: rp("a\nb"), inode: 7, mode: 0o444, working: 0o644)]
        do {
            let (store, _) = try JournalRecordStore.open(directory: directory)
            #expect(try store.lentModes().isEmpty)
            try store.noteLentModes(entries)
            try store.close()  // Nothing committed: the note does not wait for a commit.
        }
        do {
            let (store, records) = try JournalRecordStore.open(directory: directory)
            #expect(try store.lentModes() == entries && records.isEmpty)
            try store.noteLentModes([])
            try store.close()
        }
        #expect(!FileManager.default.fileExists(atPath: folder + "/journal/lent-modes"), "an empty note is removed")
        let (store, _) = try JournalRecordStore.open(directory: directory)
        #expect(try store.lentModes().isEmpty)
        try store.close()
    }
}
