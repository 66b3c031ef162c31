import NimbusVocabulary
import Testing
import NimbusSystem
@testable import NimbusCore

private func rp(_ s: String) -> RelativePath { try! RelativePath(validating: s) }
private func meta(size: Int64, inode: UInt64, device: UInt64 = 1, mtime: Int64 = 1_700_000_000_000_000_000) -> FileMetadata {
    FileMetadata(kind: .file, size: size, mtime: mtime, mode: 0o644, inode: inode, device: device)
}

/// A journal in memory, for the fold.
struct RecordsModel: PlaceholderRecords {
    var records: [RelativePath: PlaceholderRecord] = [:]
    func placeholderRecord(at path: RelativePath) -> PlaceholderRecord? { records[path] }
    func path(ofInode inode: UInt64, on side: Side) -> RelativePath? {
        records.first { $0.value.base[side].inode == inode }?.key
    }
    var placeholderCount: Int { records.values.count(where: \.isPlaceholder) }
}

/// The fold alone: what it recognises, what it leaves out of a pass, which repairs it plans
/// (DESIGN §5). The engine tests run the same decisions through the executor.
@Suite struct PlaceholderFoldTests {
    let namer = ConflictNamer(device: "test", wallTime: WallInstant(nanoseconds: 1_700_000_000_000_000_000))
    let cloudFile = meta(size: 14, inode: 3, device: 2)

    /// `data`, tracked as a placeholder, and its placeholder file.
    func tracked(_ name: String = "data", cloud: FileMetadata? = nil, placeholderInode: UInt64 = 40)
        -> (records: RecordsModel, base: [RelativePath: BaseEntry], placeholder: FileMetadata, text: [UInt8]) {
        let cloud = cloud ?? cloudFile
        let text = Placeholder.contents(for: rp(name), cloud: cloud)
        let placeholder = meta(size: Int64(text.count), inode: placeholderInode)
        let base = BaseEntry(local: placeholder, cloud: cloud)
        return (RecordsModel(records: [rp(name): PlaceholderRecord(base: base, isPlaceholder: true)]), [rp(name): base], placeholder, text)
    }

    func fold(_ style: PlaceholderStyle = .suffix, scope: [RelativePath] = [.root], base: [RelativePath: BaseEntry],
              local: [RelativePath: FileMetadata], cloud: [RelativePath: FileMetadata], records: RecordsModel,
              contents: [RelativePath: [UInt8]] = [:]) -> PlaceholderFold {
        var known: [RelativePath: PlaceholderFileContents] = [:]
        var result = foldPlaceholders(style: style, scope: scope, base: base, local: local, cloud: cloud, records: records, namer: namer)
        // The engine's loop: read what the fold asks for, and fold again.
        for _ in 0..<3 where !result.needsContents.isEmpty {
            for file in result.needsContents { known[file] = contents[file].map { .bytes($0) } ?? .unreadable }
            result = foldPlaceholders(style: style, scope: scope, base: base, local: local, cloud: cloud, records: records,
                                      contents: known, namer: namer)
        }
        return result
    }

    @Test func aTrackedPlaceholderStandsForItsFileAtItsBaseWithoutBeingRead() {
        let t = tracked()
        let result = foldPlaceholders(style: .suffix, scope: [.root], base: t.base, local: [rp("data.nimbus"): t.placeholder],
                                      cloud: [rp("data"): cloudFile], records: t.records, namer: namer)
        #expect(result.needsContents.isEmpty, "an unchanged tracked placeholder is not read")
        #expect(result.local == [rp("data"): t.placeholder])
        #expect(result.placeholders == [rp("data"): t.placeholder])
        #expect(result.repairs.isEmpty && result.withheld.isEmpty && !result.needsWholeFolder)
    }

    /// The flaky integration test of issue 16, as a pure case: in a pass over
    /// `data.nimbus` and `data.nimbus.nimbus` only, the placeholder `data.nimbus` stands for
    /// `data`, which is outside: the fold asks for the whole folder instead of folding it.
    @Test func aPlaceholderWhoseFileIsOutsideThePassAsksForTheWholeFolder() {
        var t = tracked()
        let other = meta(size: 40, inode: 4, device: 2)
        let otherText = Placeholder.contents(for: rp("data.nimbus"), cloud: other)
        let otherPlaceholder = meta(size: Int64(otherText.count), inode: 41)
        t.records.records[rp("data.nimbus")] = PlaceholderRecord(base: BaseEntry(local: otherPlaceholder, cloud: other), isPlaceholder: true)
        let local = [rp("data.nimbus"): t.placeholder, rp("data.nimbus.nimbus"): otherPlaceholder]
        let partial = fold(scope: [rp("data.nimbus"), rp("data.nimbus.nimbus")],
                           base: [rp("data.nimbus"): t.records.records[rp("data.nimbus")]!.base],
                           local: local, cloud: [rp("data.nimbus"): other], records: t.records)
        #expect(partial.needsWholeFolder)
        let whole = fold(base: [rp("data"): t.base[rp("data")]!, rp("data.nimbus"): t.records.records[rp("data.nimbus")]!.base],
                         local: local, cloud: [rp("data"): cloudFile, rp("data.nimbus"): other], records: t.records)
        #expect(!whole.needsWholeFolder && whole.repairs.isEmpty)
        #expect(whole.placeholders == [rp("data"): t.placeholder, rp("data.nimbus"): otherPlaceholder])
        #expect(whole.local == [rp("data"): t.placeholder, rp("data.nimbus"): otherPlaceholder])
    }

    @Test func aRealFileWhereTheJournalSaysPlaceholderIsAdoptedNotUploaded() {
        let t = tracked()
        let real = meta(size: 14, inode: 77)
        let result = fold(base: t.base, local: [rp("data"): real], cloud: [rp("data"): cloudFile], records: t.records)
        #expect(result.repairs == [.adoptLocalFile(rp("data"), local: real, cloud: cloudFile)])
        #expect(result.withheld == [rp("data")] && result.local[rp("data")] == nil)
        // Its placeholder may still be there, outside a pass over `data` alone.
        let partial = fold(scope: [rp("data")], base: t.base, local: [rp("data"): real], cloud: [rp("data"): cloudFile], records: t.records)
        #expect(partial.needsWholeFolder && partial.repairs.isEmpty)
    }

    @Test func aPlaceholderBesideItsRealFileIsRetiredAndTheFileAdopted() {
        let t = tracked()
        let real = meta(size: 14, inode: 77)
        let result = fold(base: t.base, local: [rp("data"): real, rp("data.nimbus"): t.placeholder], cloud: [rp("data"): cloudFile],
                          records: t.records)
        #expect(result.repairs == [.adoptLocalFile(rp("data"), local: real, cloud: cloudFile),
                                   .retirePlaceholder(file: rp("data.nimbus"), expected: t.placeholder)])
    }

    @Test func aPlaceholderSomeoneWroteIntoIsRepairedNotUploaded() {
        let t = tracked()
        let edited = meta(size: 300, inode: 40, mtime: 1_700_000_100_000_000_000)
        let result = fold(base: t.base, local: [rp("data.nimbus"): edited], cloud: [rp("data"): cloudFile], records: t.records,
                          contents: [rp("data.nimbus"): t.text + Array("my notes\n".utf8)])
        #expect(result.repairs == [.repairPlaceholder(rp("data"), file: rp("data.nimbus"), edited: edited, cloud: cloudFile)])
        #expect(result.withheld.isSuperset(of: [rp("data"), rp("data.nimbus")]))
        #expect(result.local.isEmpty, "neither a deletion nor an upload this pass")
        // Touched only (same text): still the placeholder.
        let touched = meta(size: Int64(t.text.count), inode: 40, mtime: 1_700_000_100_000_000_000)
        let same = fold(base: t.base, local: [rp("data.nimbus"): touched], cloud: [rp("data"): cloudFile], records: t.records,
                        contents: [rp("data.nimbus"): t.text])
        #expect(same.repairs.isEmpty && same.placeholders == [rp("data"): touched])
    }

    /// Before the one calendar, a cloud mtime before 1970 with a fraction was written one
    /// second late. Such a placeholder, touched since, is still the placeholder, not the
    /// user's text to keep and upload.
    @Test func aPlaceholderWrittenWithTheOldSecondBefore1970IsStillThePlaceholder() {
        let early = meta(size: 14, inode: 3, device: 2, mtime: -1_500_000_000)
        let t = tracked(cloud: early)
        let writtenBefore = Array(String(decoding: t.text, as: UTF8.self)
            .replacing("mtime = 1969-12-31T23:59:58.500000000Z", with: "mtime = 1969-12-31T23:59:59.500000000Z").utf8)
        #expect(writtenBefore != t.text, "the placeholder is written at the second −1.5 s falls in")
        let touched = meta(size: Int64(writtenBefore.count), inode: 40, mtime: 1_700_000_100_000_000_000)
        let result = fold(base: t.base, local: [rp("data.nimbus"): touched], cloud: [rp("data"): early], records: t.records,
                          contents: [rp("data.nimbus"): writtenBefore])
        #expect(result.repairs.isEmpty && result.placeholders == [rp("data"): touched])
    }

    @Test func aPlaceholderRenamedWithoutItsSuffixGetsItBack() {
        let t = tracked()
        let result = fold(base: t.base, local: [rp("other"): t.placeholder], cloud: [rp("data"): cloudFile], records: t.records,
                          contents: [rp("other"): t.text])
        #expect(result.repairs == [.movePlaceholder(from: rp("other"), to: rp("other.nimbus"), expected: t.placeholder)])
        #expect(result.withheld.isSuperset(of: [rp("other"), rp("other.nimbus")]))
        // An inode reused by a file of someone's: not a placeholder, left alone.
        let reused = fold(base: t.base, local: [rp("other"): t.placeholder], cloud: [rp("data"): cloudFile], records: t.records,
                          contents: [rp("other"): Array("mine".utf8)])
        #expect(reused.repairs.isEmpty && reused.local[rp("other")] == t.placeholder)
    }

    @Test func aPlaceholderRenamedOntoAnotherFilesNameMovesAside() {
        var t = tracked()
        let mine = meta(size: 5, inode: 90)
        t.records.records[rp("taken")] = PlaceholderRecord(base: BaseEntry(local: mine, cloud: meta(size: 5, inode: 91, device: 2)),
                                                            isPlaceholder: false)
        let result = fold(base: t.base.merging([rp("taken"): t.records.records[rp("taken")]!.base]) { $1 },
                          local: [rp("taken.nimbus"): t.placeholder, rp("taken"): mine], cloud: [rp("data"): cloudFile], records: t.records)
        guard case .movePlaceholder(let from, let to, let expected)? = result.repairs.first, result.repairs.count == 1 else {
            Issue.record("expected one move aside: \(result.repairs)")
            return
        }
        #expect(from == rp("taken.nimbus") && expected == t.placeholder && Placeholder.target(of: to)?.description.hasPrefix("taken (conflict") == true)
        #expect(result.withheld.contains(rp("data")), "the rename is not taken for a deletion of data meanwhile")
        #expect(result.local[rp("taken")] == mine, "the other file is untouched")
    }

    @Test func anUntrackedPlaceholderIsAStrayWhenItsFileIsInTheCloudElseRetired() {
        let text = Placeholder.contents(for: rp("data"), cloud: cloudFile)
        let found = meta(size: Int64(text.count), inode: 60)
        let stray = fold(base: [:], local: [rp("data.nimbus"): found], cloud: [rp("data"): cloudFile], records: RecordsModel(),
                         contents: [rp("data.nimbus"): text])
        #expect(stray.strays == [rp("data"): found] && stray.local.isEmpty && stray.repairs.isEmpty)
        let orphan = fold(base: [:], local: [rp("data.nimbus"): found], cloud: [:], records: RecordsModel(), contents: [rp("data.nimbus"): text])
        #expect(orphan.repairs == [.retirePlaceholder(file: rp("data.nimbus"), expected: found)])
        let content = fold(base: [:], local: [rp("data.nimbus"): found], cloud: [:], records: RecordsModel(),
                           contents: [rp("data.nimbus"): Array("a file of mine\n".utf8)])
        #expect(content.repairs.isEmpty && content.local == [rp("data.nimbus"): found], "a file of someone's called data.nimbus")
        let unreadable = fold(base: [:], local: [rp("data.nimbus"): found], cloud: [:], records: RecordsModel())
        #expect(unreadable.unreadable == [rp("data.nimbus")] && unreadable.local.isEmpty, "neither uploaded nor removed")
    }

    @Test func aPlaceholderFoundWhereAnEvictionStoppedIsAdopted() {
        let real = meta(size: 14, inode: 77)
        let base = BaseEntry(local: real, cloud: cloudFile)
        let records = RecordsModel(records: [rp("data"): PlaceholderRecord(base: base, isPlaceholder: false)])
        let text = Placeholder.contents(for: rp("data"), cloud: cloudFile)
        let placeholder = meta(size: Int64(text.count), inode: 61)
        let result = fold(base: [rp("data"): base], local: [rp("data.nimbus"): placeholder], cloud: [rp("data"): cloudFile],
                          records: records, contents: [rp("data.nimbus"): text])
        #expect(result.repairs == [.adoptPlaceholder(rp("data"), placeholder: placeholder, cloud: cloudFile)])
        #expect(result.withheld == [rp("data"), rp("data.nimbus")] && result.local.isEmpty)
    }

    @Test func aMissingTrackedPlaceholderInAPartialPassAsksForTheWholeFolder() {
        let t = tracked()
        let result = fold(scope: [rp("data")], base: t.base, local: [:], cloud: [rp("data"): cloudFile], records: t.records)
        #expect(result.needsWholeFolder, "it may have been renamed out of the pass; a deletion is concluded only from the whole folder")
        let whole = fold(base: t.base, local: [:], cloud: [rp("data"): cloudFile], records: t.records)
        #expect(!whole.needsWholeFolder && whole.local.isEmpty, "gone from the whole folder: a deletion")
    }

    /// Real names: the journal says which files are placeholders; no name clash, no repair.
    @Test func realNamePlaceholdersAreKnownByTheJournal() {
        let sparse = meta(size: 14, inode: 70)
        let base = BaseEntry(local: sparse, cloud: cloudFile)
        let records = RecordsModel(records: [rp("data"): PlaceholderRecord(base: base, isPlaceholder: true),
                                             rp("data.nimbus"): PlaceholderRecord(base: BaseEntry(local: meta(size: 3, inode: 71),
                                                                                                  cloud: meta(size: 3, inode: 5, device: 2)),
                                                                                 isPlaceholder: false)])
        let local = [rp("data"): sparse, rp("data.nimbus"): meta(size: 3, inode: 71)]
        let result = fold(.realName, base: [rp("data"): base], local: local, cloud: [rp("data"): cloudFile], records: records)
        #expect(result.placeholders == [rp("data"): sparse])
        #expect(result.local == local && result.repairs.isEmpty && result.needsContents.isEmpty)
        #expect(PlaceholderStyle.realName.file(for: rp("d/x")) == rp("d/x") && PlaceholderStyle.realName.target(of: rp("d/x.nimbus")) == nil)
        // Filled or written since: content, reconciled as any change.
        let written = meta(size: 20, inode: 70, mtime: 1_700_000_200_000_000_000)
        let changed = fold(.realName, base: [rp("data"): base], local: [rp("data"): written], cloud: [rp("data"): cloudFile], records: records)
        #expect(changed.placeholders.isEmpty && changed.local[rp("data")] == written)
    }

    /// A real-name placeholder being filled for a reader: the fill's writes move its time (until
    /// the fill restores it), which is no edit. Taken for one, the half-filled file would be
    /// uploaded over its own cloud file; the fill's outcome decides instead.
    @Test func aRealNamePlaceholderBeingFilledIsStillThePlaceholder() {
        let sparse = meta(size: 14, inode: 70)
        let base = BaseEntry(local: sparse, cloud: cloudFile)
        let records = RecordsModel(records: [rp("data"): PlaceholderRecord(base: base, isPlaceholder: true)])
        let midFill = meta(size: 14, inode: 70, mtime: 1_700_000_200_000_000_000)
        let filling = foldPlaceholders(style: .realName, scope: [.root], base: [rp("data"): base], local: [rp("data"): midFill],
                                       cloud: [rp("data"): cloudFile], records: records, namer: namer, filling: [rp("data")])
        #expect(filling.placeholders == [rp("data"): midFill])
        #expect(filling.local[rp("data")] == sparse, "it stands for its cloud file, unchanged")
        let otherwise = foldPlaceholders(style: .realName, scope: [.root], base: [rp("data"): base], local: [rp("data"): midFill],
                                         cloud: [rp("data"): cloudFile], records: records, namer: namer)
        #expect(otherwise.placeholders.isEmpty && otherwise.local[rp("data")] == midFill, "not being filled: an edit")
    }
}
