import NimbusVocabulary
import Testing
import NimbusCore
import NimbusSystem
@testable import NimbusDaemon

@Suite struct SyncIndexTests {
    func path(_ text: String) -> RelativePath { try! RelativePath(validating: text) }

    func record(inode: UInt64, conflict: String? = nil) -> PathRecord {
        let meta = FileMetadata(kind: .file, size: 1, mtime: 1, mode: 0o644, inode: inode)
        return PathRecord(base: BaseEntry(local: meta, cloud: meta), conflictCopy: conflict.map(path))
    }

    /// The conflict count `status` reports is kept as records change, not recounted.
    @Test func conflictCountFollowsEveryChange() {
        var index = SyncIndex()
        index[path("a")] = record(inode: 1)
        index[path("b")] = record(inode: 2, conflict: "b (conflict)")
        index[path("c")] = record(inode: 3, conflict: "c (conflict)")
        #expect(index.conflicts == 2)
        index[path("b")] = record(inode: 2)                       // resolved
        index[path("a")] = record(inode: 1, conflict: "a (conflict)")
        index[path("a")] = record(inode: 1, conflict: "a (conflict 2)")  // replaced, still one
        #expect(index.conflicts == 2)
        index[path("c")] = nil
        #expect(index.conflicts == 1)
        index.rekey(from: path("a"), to: path("z"))
        #expect(index.conflicts == 1 && index[path("z")]?.conflictCopy != nil)
        let rebuilt = SyncIndex(index.records)
        #expect(rebuilt.conflicts == 1 && rebuilt.count == 2)
    }

    /// Hard links: every synced name of a local inode is known while it has several; when
    /// one goes, the other still finds the inode (for rename detection).
    @Test func theNamesOfAHardLinkedFileAreKept() {
        var index = SyncIndex()
        index[path("a")] = record(inode: 7)
        #expect(index.otherLocalNames(of: path("a")).isEmpty)
        index[path("d")] = record(inode: 8)
        index[path("d/b")] = record(inode: 7)
        index[path("c")] = record(inode: 7)
        #expect(index.otherLocalNames(of: path("d/b")) == [path("a"), path("c")])
        index[path("a")] = record(inode: 7)  // rewritten, same file
        #expect(index.otherLocalNames(of: path("a")) == [path("d/b"), path("c")])
        index[path("c")] = nil
        index.rekey(from: path("d"), to: path("e"))
        #expect(index.otherLocalNames(of: path("a")) == [path("e/b")])
        index[path("e/b")] = nil
        #expect(index.otherLocalNames(of: path("a")).isEmpty)
        #expect(index.path(ofInode: 7, on: .local) == path("a"))
        index[path("a")] = record(inode: 9)  // replaced by another file
        index[path("x")] = record(inode: 7)
        #expect(index.otherLocalNames(of: path("x")).isEmpty && index.otherLocalNames(of: path("a")).isEmpty)
        #expect(SyncIndex(index.records).otherLocalNames(of: path("x")).isEmpty)
    }

    @Test func removalKeepsTheRestReachable() {
        var index = SyncIndex()
        for (inode, name) in ["d", "d/x", "d/y", "e"].enumerated() { index[path(name)] = record(inode: UInt64(inode + 1)) }
        index[path("d/x")] = nil
        #expect(Set(index.subtree(path("d"))) == [path("d"), path("d/y")])
        #expect(index[path("e")] != nil && index.count == 3)
        #expect(index.path(ofInode: index[path("d/y")]!.base.local.inode, on: .local) == path("d/y"))
    }

    @Test func shrinkingAfterALargePassKeepsEveryRecord() {
        var index = SyncIndex()
        for n in 0..<1_000 { index[path("f\(n)")] = record(inode: UInt64(n + 1)) }
        for n in 100..<1_000 { index[path("f\(n)")] = nil }
        index.shrinkToFit()
        #expect(index.count == 100 && (0..<100).allSatisfy { index[path("f\($0)")]?.base.local.inode == UInt64($0 + 1) })
        index[path("g")] = record(inode: 5_000)
        #expect(index.count == 101 && index.path(ofInode: 5_000, on: .cloud) == path("g"))
    }
}
