import Testing
import NimbusCore
import NimbusSimulation
import NimbusVocabulary
@testable import NimbusDaemon

/// What a control command changes outside a pass (download, pin, evict, resolve, restore,
/// confirm-deletes, revert-deletes; the cache budget's evictions) follows a pass's order
/// (`NamespaceFlushTests`): every name it changes is flushed before the journal's commit
/// that records it. Before
/// `SyncEngine.changingNames`, only the pass flushed: a command's commit could be durable
/// before its rename, and a crash that lost the rename left a journal saying the file is
/// synced at a name where it is missing.
@Suite struct OutOfPassFlushTests {
    enum Command: String, CaseIterable {
        case download, pin, evict, cacheBudget, resolveKeepingLocal, resolveKeepingCloud, restore, confirmDeletes, revertDeletes

        /// An eviction records the placeholder (installed durably) before the file goes, so no
        /// commit follows the removal: that is flushed before the command returns.
        var evicts: Bool { self == .evict || self == .cacheBudget }
    }

    /// An on-demand pair (suffix placeholders) after its first sync: `up/a`, `up/b`, `up/c`
    /// uploaded, `cl/x` a placeholder, and what `command` needs made since.
    static func prepared(for command: Command) throws -> UploadingPair {
        let pair = UploadingPair(sameFilesystem: false) { settings in
            settings.onDemand = true
            settings.placeholderStyle = .suffix
            settings.minFreeSpace = 0
            if command == .cacheBudget { settings.cacheLimit = 1 }
        }
        try pair.cloud.base.write(rp("cl/x"), Array("in the cloud".utf8))
        let many = command == .confirmDeletes || command == .revertDeletes ? 120 : 0
        for index in 0..<many { try pair.local.base.write(rp("m/f\(index)"), Array("file \(index)".utf8)) }
        pair.engine.start()
        #expect(pair.isSynced && pair.engine.entry(rp("cl/x"))?.state == .notDownloaded, "the first sync is done")
        pair.clock.advance(by: .seconds(1))
        switch command {
        case .download, .pin, .evict, .cacheBudget:
            break
        case .resolveKeepingLocal, .resolveKeepingCloud:
            try pair.local.base.write(rp("up/a"), Array("mine".utf8))
            try pair.cloud.base.write(rp("up/a"), Array("theirs!".utf8))
            pair.engine.sync(nil)
            try #require(pair.engine.conflicts().count == 1)
        case .restore:
            try pair.local.base.write(rp("up/a"), Array("second".utf8))
            pair.engine.sync(nil)
            try #require(try pair.engine.versions(of: rp("up/a")).count == 1)
        case .confirmDeletes, .revertDeletes:
            // 40 deletions applied (kept, for a revert), then 80 more held by the guard.
            for index in 0..<40 { try pair.cloud.base.removeFile(rp("m/f\(index)")) }
            pair.engine.sync(nil)
            for index in 40..<many { try pair.cloud.base.removeFile(rp("m/f\(index)")) }
            pair.clock.advance(by: .seconds(1))
            pair.engine.sync(nil)
            try #require(pair.engine.status.heldDeletes == 80)
        }
        pair.clock.advance(by: .seconds(1))
        return pair
    }

    static func run(_ command: Command, on pair: UploadingPair) throws {
        let engine = pair.engine
        switch command {
        case .download: _ = try engine.download(rp("cl/x"), .explicit)
        case .pin: _ = try engine.pin(rp("cl/x"))
        case .evict: _ = try engine.evict(rp("up/a"))
        case .cacheBudget: #expect(engine.enforceCacheBudget() == 3)
        case .resolveKeepingLocal: try engine.resolve(rp("up/a"), keep: .local)
        case .resolveKeepingCloud: try engine.resolve(rp("up/a"), keep: .cloud)
        case .restore: _ = try engine.restore(rp("up/a"), versionID: nil, to: nil)
        case .confirmDeletes: #expect(engine.confirmDeletes() == 80)
        case .revertDeletes: #expect(engine.revertDeletes() == 120)
        }
    }

    /// In the command's trace: before each commit, each change of names on a side (but a file
    /// installed durably at its name, its folder fsynced) is followed by a flush of that side.
    @Test(arguments: Command.allCases)
    func aNameChangedByACommandIsFlushedBeforeTheCommitThatRecordsIt(_ command: Command) throws {
        let pair = try Self.prepared(for: command)
        let start = pair.trace.all.count
        try Self.run(command, on: pair)
        let trace = Array(pair.trace.all.dropFirst(start))
        let shown = trace.filter { $0.operation != "metadata" && $0.operation != "scan" }
        let commits = trace.indices.filter { trace[$0].actor == "journal" && trace[$0].operation == "commit" }
        #expect(!commits.isEmpty, "\(command) is recorded; it did: \(shown)")
        var changes = 0
        for commit in commits {
            for side in ["local", "cloud"] {
                for index in trace[..<commit].indices where trace[index].actor == side
                    && NamespaceFlushTests.namespaceOperations.contains(trace[index].operation) {
                    // A file written then installed durably at its name (folder fsynced).
                    let durable = ["writeFile", "install"].contains(trace[index].operation) && trace[index..<commit].contains {
                        $0.actor == side && $0.operation == "durable" && $0.paths.first == trace[index].paths.first
                    }
                    if durable { continue }
                    changes += 1
                    #expect(trace[index..<commit].contains { $0.actor == side && $0.operation == "synchronize" },
                            "\(command): \(trace[index]) is flushed before the commit; the command did: \(shown)")
                }
            }
        }
        #expect(changes > 0 || command.evicts, "\(command) changed names before a commit; it did: \(shown)")
        if command.evicts {
            let removal = try #require(trace.lastIndex { $0.actor == "local" && $0.operation == "removeFile" }, "\(shown)")
            #expect(trace[removal...].contains { $0.actor == "local" && $0.operation == "synchronize" },
                    "the evicted file's removal is flushed; the command did: \(shown)")
        }
    }
}
