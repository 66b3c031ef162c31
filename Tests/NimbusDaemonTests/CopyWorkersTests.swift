import Foundation
import Synchronization
import Testing
import NimbusCore
import NimbusSystem
import NimbusVocabulary
@testable import NimbusDaemon

/// The copies of a batch prepared on worker threads (issue 15), on real folders: the same
/// result as one thread, dependent actions wait for the copies before them, a failed copy is
/// retried on its own, and a stop leaves nothing half-done behind.
@Suite struct CopyWorkersTests {
    /// Every entry below `side` except the cloud's `.nimbus`: path, mode, content (nil for a
    /// folder). Conflict copies are named after the clock, so their names are normalized.
    static func tree(_ pair: DiskPair, _ side: DiskFileSystem) throws -> [String] {
        let root = side === pair.local ? "\(pair.root)/local" : "\(pair.root)/cloud"
        return try FileManager.default.subpathsOfDirectory(atPath: root).filter { !$0.hasPrefix(".nimbus") }.map { path in
            let metadata = try #require(try side.metadata(of: rp(path)))
            let content = metadata.kind == .file ? String(decoding: try side.readFile(rp(path), limit: 1 << 20), as: UTF8.self) : "/"
            let name = path.contains("conflict") ? "CONFLICT COPY" : path
            return "\(name) \(String(metadata.mode, radix: 8)) \(content)"
        }.sorted()
    }

    /// Copies' temporary files and staging folders left on either side (not the kept deletions).
    static func temporaries(_ pair: DiskPair) throws -> [String] {
        try ["local", "cloud"].flatMap { side in
            try FileManager.default.subpathsOfDirectory(atPath: "\(pair.root)/\(side)").filter { path in
                path.split(separator: "/").contains { TemporaryName.isCopyTemporary(Array($0.utf8)) }
            }
        }
    }

    /// A first sync, then a pass whose plan interleaves batched copies (new files both ways,
    /// edited files, a new folder uploaded as a unit) with actions that depend on them: a
    /// folder renamed, files and a folder removed, a conflict moved aside, a mode changed.
    /// Returns both sides' trees and the threads the copies' progress came from.
    static func interleavedPass(copyThreads: Int) throws -> (local: [String], cloud: [String], threads: Set<UInt>) {
        let pair = try DiskPair { $0.copyThreads = copyThreads }
        for i in 0..<30 { try pair.plant("local/keep/f\(i)", "keep \(i)") }
        for i in 0..<10 { try pair.plant("local/old/g\(i)", "old \(i)") }
        for i in 0..<5 { try pair.plant("local/gone/h\(i)", "gone \(i)") }
        try pair.plant("local/c.txt", "base")
        pair.engine.start()
        #expect(try tree(pair, pair.local) == tree(pair, pair.cloud), "the first sync")

        for i in 0..<40 { try pair.plant("local/new/sub\(i % 3)/n\(i)", "new \(i)") }
        for i in 0..<20 { try pair.plant("cloud/down/d\(i)", "down \(i)") }
        for i in 0..<10 { try pair.plant("local/keep/f\(i)", "edited \(i)") }
        try FileManager.default.moveItem(atPath: "\(pair.root)/local/old", toPath: "\(pair.root)/local/moved")
        try pair.plant("local/moved/g10", "added after the move")
        try FileManager.default.removeItem(atPath: "\(pair.root)/cloud/gone")
        try pair.plant("local/c.txt", "local edit")
        try pair.plant("cloud/c.txt", "cloud edit")
        try pair.cloud.setAttributes(rp("keep/f20"), mode: 0o600, mtime: nil)

        let engineThread = ProcessSupport.currentThreadIdentity
        let threads = Mutex<Set<UInt>>([])
        pair.engine.onEvent { event in
            switch event {
            case .stateChanged(_, .uploading(progress: let done)), .stateChanged(_, .downloading(progress: let done)):
                if done > 0 { _ = threads.withLock { $0.insert(ProcessSupport.currentThreadIdentity) } }
            default: break
            }
        }
        pair.clock.advance(by: .seconds(2))
        pair.engine.sync(nil)
        pair.engine.onEvent(nil)
        let left = try temporaries(pair)
        #expect(left.isEmpty, "left: \(left)")
        for i in 0..<40 { #expect(pair.engine.entry(rp("new/sub\(i % 3)/n\(i)"))?.state == .downloaded, "new/…/n\(i)") }
        for i in 0..<20 { #expect(pair.engine.entry(rp("down/d\(i)"))?.state == .downloaded, "down/d\(i)") }
        return (try tree(pair, pair.local), try tree(pair, pair.cloud), threads.withLock { $0 }.subtracting([engineThread]))
    }

    @Test func aPassWithDependentActionsEndsAsWithOneThread() throws {
        let one = try Self.interleavedPass(copyThreads: 1)
        let two = try Self.interleavedPass(copyThreads: 2)
        #expect(one.local == one.cloud)
        #expect(two.local == two.cloud)
        #expect(two.local == one.local, "two threads must leave the same tree as one")
        #expect(one.local.contains("moved/g10 644 added after the move") && one.local.contains("keep/f20 600 keep 20"))
        #expect(!one.local.contains { $0.hasPrefix("gone") || $0.hasPrefix("old") })
        #expect(one.local.count { $0.hasPrefix("CONFLICT COPY") } == 1)
        #expect(one.threads.isEmpty, "one thread: every copy on the engine thread")
        #expect((1...2).contains(two.threads.count), "two threads: the copies prepared on workers (\(two.threads.count))")
    }

    /// A plan that removes the sources of its copies right after them (each removal in the
    /// reverse order, so the first one comes when the last copy was just handed over): every
    /// removal waits until the copies before it are prepared, so each file reaches the cloud.
    @Test(arguments: [1, 2])
    func actionsAfterCopiesWaitForThem(copyThreads: Int) throws {
        let pair = try DiskPair { $0.copyThreads = copyThreads }
        try pair.plant("local/first", "first")
        pair.engine.start()
        let count = 40
        for i in 0..<count { try pair.plant("local/a/f\(i)", String(repeating: "content \(i) ", count: 4096)) }
        var plan = Plan()
        plan.actions.append(.makeDirectory(rp("a"), on: .cloud, source: try #require(try pair.local.metadata(of: rp("a")))))
        var sources: [RelativePath: FileMetadata] = [:]
        for i in 0..<count {
            let path = rp("a/f\(i)")
            sources[path] = try #require(try pair.local.metadata(of: path))
            plan.actions.append(.copy(path, to: .cloud, source: sources[path]!, replacing: nil))
        }
        for i in (0..<count).reversed() {
            let path = rp("a/f\(i)")
            plan.actions.append(.remove(path, on: .local, expected: sources[path]!))
        }
        _ = pair.engine.execute(plan)

        for i in 0..<count {
            #expect(try pair.cloud.readFile(rp("a/f\(i)"), limit: 1 << 20) == Array(String(repeating: "content \(i) ", count: 4096).utf8),
                    "a/f\(i) copied before its source was removed")
            #expect(try pair.local.metadata(of: rp("a/f\(i)")) == nil, "a/f\(i) removed after its copy")
        }
        #expect(try Self.temporaries(pair).isEmpty)
    }

    /// The source of one copy in the middle of a batch changes after the plan was made: only
    /// that copy fails, is retried, and lands at the next pass; the others are installed.
    @Test(arguments: [1, 2])
    func aCopyThatFailsMidBatchIsRetriedOnItsOwn(copyThreads: Int) throws {
        let pair = try DiskPair { $0.copyThreads = copyThreads }
        try pair.plant("local/first", "first")
        pair.engine.start()
        for i in 0..<40 { try pair.plant("local/batch/f\(i)", "content \(i)") }
        pair.clock.advance(by: .seconds(2))
        let plan = pair.engine.makePlan(pair.engine.gather([.root]))
        #expect(plan.actions.count { if case .copy = $0 { true } else { false } } == 40)
        try pair.plant("local/batch/f17", "changed after the plan, and longer")
        _ = pair.engine.execute(plan)
        pair.engine.commit()

        for i in 0..<40 where i != 17 {
            #expect(try pair.cloud.readFile(rp("batch/f\(i)"), limit: 1 << 10) == Array("content \(i)".utf8), "batch/f\(i)")
        }
        #expect(try pair.cloud.metadata(of: rp("batch/f17")) == nil, "a copy of a changed source is not installed")
        let retried = pair.engine.tables.retryPaths
        #expect(retried == [rp("batch/f17")], "only the changed file is retried: \(retried)")
        let shown = pair.engine.tables.transientPaths
        #expect(shown.isSubset(of: [rp("batch/f17")]), "only the changed file may still be shown as copying: \(shown)")
        #expect(try Self.temporaries(pair).isEmpty)

        pair.clock.advance(by: .seconds(10))
        pair.engine.sync(pair.engine.dueRetries())
        #expect(try pair.cloud.readFile(rp("batch/f17"), limit: 1 << 10) == Array("changed after the plan, and longer".utf8))
    }

    /// A stop requested in the middle of a batch: what was prepared is installed and
    /// recorded, nothing else; no temporary file or staging folder stays; nothing is shown
    /// as still copying.
    @Test(arguments: [1, 2])
    func aStopMidBatchRecordsOnlyWhatWasInstalled(copyThreads: Int) throws {
        let pair = try DiskPair { $0.copyThreads = copyThreads }
        let count = 300
        for i in 0..<count { try pair.plant("local/d\(i / 10)/f\(i)", "content \(i)") }
        let beats = Mutex(0)
        let engine = pair.engine
        engine.onHeartbeat {
            if beats.withLock({ $0 += 1; return $0 }) == count / 3 { engine.requestStop() }
        }
        engine.start()

        let copied = (0..<count).filter { (try? pair.cloud.metadata(of: rp("d\($0 / 10)/f\($0)"))) != nil }
        #expect(!copied.isEmpty && copied.count < count * 2 / 3, "the pass must stop part of the way (\(copied.count) copied)")
        #expect(try Self.temporaries(pair).isEmpty, "no temporary or staging folder may be left")
        let store = try #require(engine.store as? MemoryRecordStore)
        let recorded = store.committed.filter { $0.value.base.kind == .file }.keys.map(\.description).sorted()
        #expect(recorded == copied.map { "d\($0 / 10)/f\($0)" }.sorted(), "exactly the installed files are recorded")
        for i in copied {
            #expect(try pair.cloud.readFile(rp("d\(i / 10)/f\(i)"), limit: 1 << 10) == Array("content \(i)".utf8))
        }
        #expect(engine.tables.transientPaths.isEmpty, "nothing is left shown as copying")
    }

    /// A stop in the middle of one big copy (SIGTERM; issue 15 point 2) gives the copy up at
    /// its next chunk: nothing at the destination, no temporary, no record, nothing shown as
    /// copying. Before, the stop was looked at only between two actions: the copy was
    /// finished, installed and recorded first, however many GiB it had to go.
    @Test func aStopMidCopyGivesTheCopyUp() throws {
        let pair = try DiskPair()
        // 24 MiB: three chunks of the copy (`ContentTransfer.chunkSize`), a progress after each.
        try pair.plant("local/big.bin", String(repeating: "0123456789abcdef", count: 24 << 16))
        let engine = pair.engine
        let progressed = Mutex<[Double]>([])
        engine.onEvent { event in
            guard case .stateChanged(_, .uploading(let progress)) = event, progress > 0 else { return }
            progressed.withLock { $0.append(progress) }
            engine.requestStop()
        }
        engine.start()

        #expect(progressed.withLock { $0 }.allSatisfy { $0 < 1 }, "the copy stopped part of the way: \(progressed.withLock { $0 })")
        #expect(!pair.exists("cloud/big.bin"), "the copy under way was given up, not finished")
        #expect(try Self.temporaries(pair).isEmpty, "its temporary is removed")
        let store = try #require(engine.store as? MemoryRecordStore)
        #expect(store.committed[rp("big.bin")] == nil, "nothing is recorded for it")
        #expect(engine.tables.transientPaths.isEmpty, "nothing is left shown as copying")
        #expect(engine.tables.retryPaths.isEmpty && engine.status.lastError == nil, "a stop is no failure")
    }
}
