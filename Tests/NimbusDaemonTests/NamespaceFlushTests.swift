import Testing
import NimbusCore
import NimbusSimulation
import NimbusVocabulary
@testable import NimbusDaemon

/// Every name a pass changes outside a batch of copies (a rename, a removal, a new folder or
/// symlink) is durable before the journal's commit that records it: a record kept after a
/// crash that lost the rename it describes would say the file is synced at a name where it
/// is missing, and the next pass would take that for a deletion and propagate it. Before,
/// only chmods (0236402) and a batch's installs were flushed; nothing else was.
@Suite struct NamespaceFlushTests {
    /// A change of names on one side, that the pass makes on the other.
    enum Change: String, CaseIterable {
        case rename, moveToAnotherFolder, deletion, newFolder, folderDeletion, newSymlink

        /// What the pair holds before its first sync, besides `UploadingPair.names`.
        static func prepare(_ disk: MemoryFileSystem) throws {
            try disk.write(rp("other/keep"), Array("keep".utf8))
            try disk.makeDirectory(rp("empty"), mode: 0o755)
        }

        func make(on disk: MemoryFileSystem) throws {
            switch self {
            case .rename: try disk.rename(rp("up/a"), to: rp("up/a2"), replacing: false)
            case .moveToAnotherFolder: try disk.rename(rp("up/b"), to: rp("other/b"), replacing: false)
            case .deletion: try disk.removeFile(rp("up/c"))
            case .newFolder: try disk.makeDirectory(rp("fresh"), mode: 0o755)
            case .folderDeletion: try disk.removeDirectory(rp("empty"))
            case .newSymlink: try disk.makeSymlink(rp("link"), target: Array("up/a".utf8))
            }
        }
    }

    /// The operations that change names in a folder.
    static let namespaceOperations: Set<String> = Set([FileSystemOperation.rename, .removeFile, .removeDirectory,
                                                       .makeDirectory, .makeSymlink, .install, .writeFile].map(\.rawValue))

    /// A pair after its first sync, with `change` made on `side` since.
    static func changedPair(_ change: Change, on side: Side) throws -> UploadingPair {
        let pair = UploadingPair(sameFilesystem: false)
        try Change.prepare(pair.local.base)
        pair.engine.start()
        #expect(pair.isSynced && pair.engine.entry(rp("empty"))?.state == .downloaded, "the first sync is done")
        pair.clock.advance(by: .seconds(1))
        try change.make(on: pair.faulty(side).base)
        return pair
    }

    /// The order in the trace of the pass: the change made on the other side, then a flush of
    /// that side, then the commit.
    @Test(arguments: Change.allCases, Side.allCases)
    func aNameChangedByAPassIsFlushedBeforeTheCommitThatRecordsIt(_ change: Change, madeOn side: Side) throws {
        let pair = try Self.changedPair(change, on: side)
        let target = "\(side.other)"
        let start = pair.trace.all.count
        pair.engine.sync(nil)
        let pass = Array(pair.trace.all.dropFirst(start))
        let label = "\(change) made in the \(side) folder; the pass did: \(pass.filter { $0.operation != "metadata" && $0.operation != "scan" })"
        let commit = try #require(pass.firstIndex { $0.actor == "journal" && $0.operation == "commit" }, "\(label): it is recorded")
        let changed = try #require(pass[..<commit].lastIndex { $0.actor == target && Self.namespaceOperations.contains($0.operation) },
                                   "\(label): the \(target) folder was changed before the commit")
        #expect(pass[changed..<commit].contains { $0.actor == target && $0.operation == "synchronize" },
                "\(label): the \(target) folder is flushed after its last change of names, before the commit")
    }

    /// Several changes in one pass: one flush of the folder they were made in, not one each.
    @Test(arguments: Side.allCases)
    func aPassOfSeveralChangesFlushesItsFolderOnce(madeOn side: Side) throws {
        let pair = try Self.changedPair(.rename, on: side)
        for change in Change.allCases where change != .rename { try change.make(on: pair.faulty(side).base) }
        let flushes = pair.faulty(side.other).calls(.synchronize)
        pair.engine.sync(nil)
        #expect(pair.faulty(side.other).calls(.synchronize) - flushes == 1)
        #expect(try pair.faulty(side.other).base.metadata(of: rp("fresh"))?.kind == .directory, "the pass was made")
    }

    /// A flush that fails holds the commit, which is tried again with its pause.
    @Test func aFailedFlushHoldsTheCommit() throws {
        let pair = try Self.changedPair(.rename, on: .local)
        pair.cloud.fail(.synchronize, with: .ioError)
        let commits = pair.store.flushesAtCommits.count
        pair.engine.sync(nil)
        #expect(try pair.cloud.base.metadata(of: rp("up/a2")) != nil, "the rename is made")
        #expect(pair.store.flushesAtCommits.count == commits, "but not recorded")
        #expect(pair.engine.status.journalError?.contains("cannot flush the cloud folder") == true)
        pair.clock.advance(by: .seconds(600))
        pair.engine.retryCommitIfDue()
        #expect(pair.store.flushesAtCommits.count == commits + 1, "recorded once the flush works")
        #expect(pair.engine.status.journalError == nil)
    }
}
