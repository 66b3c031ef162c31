import NimbusVocabulary
import Testing
@testable import NimbusCore

private func rp(_ s: String) -> RelativePath { try! RelativePath(validating: s) }
private func file(size: Int64, inode: UInt64, device: UInt64 = 1, mtime: Int64 = 1_700_000_000_000_000_000, mode: UInt32 = 0o644) -> FileMetadata {
    FileMetadata(kind: .file, size: size, mtime: mtime, mode: mode, inode: inode, device: device)
}

/// A placeholder a style switch could not convert at start (its new name taken) is still in
/// the old style when the passes begin; the fold settles it first (`foldPlaceholdersOfTheOtherStyle`):
/// its file is never taken for content, the user's file is never overwritten, and once the
/// name is free the conversion completes.
@Suite struct PlaceholderLeftoverTests {
    let namer = ConflictNamer(device: "test", wallTime: WallInstant(nanoseconds: 1_700_000_000_000_000_000))
    let cloudX = file(size: 7, inode: 3, device: 2)
    var text: [UInt8] { Placeholder.contents(for: rp("x"), cloud: cloudX) }
    /// `x.nimbus`, the suffix placeholder of `x` the journal recorded.
    var suffixFile: FileMetadata { file(size: Int64(text.count), inode: 40) }
    /// `x`, the sparse real-name placeholder of `x` the journal recorded.
    var sparseFile: FileMetadata { file(size: 7, inode: 41) }
    let mine = file(size: 4, inode: 50, mtime: 1_800_000_000_000_000_000)

    func journal(_ placeholder: FileMetadata, at name: String = "x") -> (RecordsModel, [RelativePath: BaseEntry]) {
        let base = BaseEntry(local: placeholder, cloud: cloudX)
        return (RecordsModel(records: [rp(name): PlaceholderRecord(base: base, isPlaceholder: true)]), [rp(name): base])
    }

    func fold(_ style: PlaceholderStyle, recorded: FileMetadata, local: [String: FileMetadata],
              contents: [String: [UInt8]] = [:]) -> PlaceholderFold {
        let (records, base) = journal(recorded)
        let here = Dictionary(uniqueKeysWithValues: local.map { (rp($0.key), $0.value) })
        var known: [RelativePath: PlaceholderFileContents] = [:]
        var result = foldPlaceholders(style: style, scope: [.root], base: base, local: here, cloud: [rp("x"): cloudX], records: records,
                                      namer: namer)
        for _ in 0..<3 where !result.needsContents.isEmpty {
            for name in result.needsContents { known[name] = contents[name.description].map { .bytes($0) } ?? .unreadable }
            result = foldPlaceholders(style: style, scope: [.root], base: base, local: here, cloud: [rp("x"): cloudX], records: records,
                                      contents: known, namer: namer)
        }
        return result
    }

    /// Fails on the code before: `x.nimbus` was a new file in the pass (its placeholder
    /// text uploaded, or `x` renamed to it in the cloud, found by its inode).
    @Test func suffixToRealNamesWithXTakenTheUsersFileReplacesThePlaceholderWhichIsNeverContent() {
        let result = fold(.realName, recorded: suffixFile, local: ["x.nimbus": suffixFile, "x": mine])
        #expect(result.repairs == [.adoptLocalFile(rp("x"), local: mine, cloud: cloudX), .retirePlaceholder(file: rp("x.nimbus"), expected: suffixFile)])
        #expect(result.withheld == [rp("x"), rp("x.nimbus")])
        #expect(result.local.isEmpty, "neither name is reconciled before the repairs: \(result.local)")
    }

    @Test func suffixToRealNamesWithXFreeTheConversionCompletes() {
        let result = fold(.realName, recorded: suffixFile, local: ["x.nimbus": suffixFile])
        #expect(result.repairs == [.convertPlaceholder(rp("x"), to: .realName, expected: suffixFile, cloud: cloudX)])
        #expect(result.local.isEmpty && result.withheld == [rp("x"), rp("x.nimbus")])
    }

    /// A suffix placeholder touched still holds its text: converted all the same. Written
    /// into, what was written is kept (repaired first, converted at the next pass); not
    /// readable yet, it waits.
    @Test func aTouchedPlaceholderIsConvertedAWrittenOneRepairedAnUnreadableOneWaits() {
        var touched = suffixFile
        touched.mtime += 1
        let converted = fold(.realName, recorded: suffixFile, local: ["x.nimbus": touched], contents: ["x.nimbus": text])
        #expect(converted.repairs == [.convertPlaceholder(rp("x"), to: .realName, expected: touched, cloud: cloudX)])
        let written = fold(.realName, recorded: suffixFile, local: ["x.nimbus": touched, "x": mine], contents: ["x.nimbus": Array("notes\n".utf8)])
        #expect(written.repairs == [.repairPlaceholder(rp("x"), file: rp("x.nimbus"), edited: touched, cloud: cloudX)])
        #expect(written.local.isEmpty)
        let unreadable = fold(.realName, recorded: suffixFile, local: ["x.nimbus": touched])
        #expect(unreadable.repairs.isEmpty && unreadable.local.isEmpty && unreadable.unreadable == [rp("x.nimbus")])
    }

    /// Real names → suffix with `x.nimbus` a file of the user's: that file is its own (before,
    /// it was taken for `x`'s placeholder written into and moved to a conflict name), and the
    /// sparse `x`, which nothing would fill, is downloaded over, as the suffix style does when
    /// a placeholder's name is taken. Guarded (mode 0 after a clean stop) all the same.
    @Test(arguments: [false, true])
    func realNamesToSuffixWithTheSuffixNameTakenDownloadsXAndLeavesTheUsersFileAlone(_ guarded: Bool) {
        var found = sparseFile
        if guarded { found.mode = 0 }
        let result = fold(.suffix, recorded: sparseFile, local: ["x": found, "x.nimbus": mine])
        #expect(result.repairs == [.copy(rp("x"), to: .local, source: cloudX, replacing: found)])
        #expect(result.withheld == [rp("x")])
        #expect(result.local == [rp("x.nimbus"): mine], "x.nimbus is reconciled as the file it is")
        #expect(result.placeholders.isEmpty)
        let tooLong = String(repeating: "n", count: 250)
        let (records, base) = journal(sparseFile, at: tooLong)
        let noName = foldPlaceholders(style: .suffix, scope: [.root], base: base, local: [rp(tooLong): found], cloud: [rp(tooLong): cloudX],
                                      records: records, namer: namer)
        #expect(noName.repairs == [.copy(rp(tooLong), to: .local, source: cloudX, replacing: found)], "no suffix name: downloaded too")
        let free = fold(.suffix, recorded: sparseFile, local: ["x": found])
        #expect(free.repairs == [.convertPlaceholder(rp("x"), to: .suffix, expected: found, cloud: cloudX)])
        #expect(free.local.isEmpty)
    }

    /// The other style's names that are not the journal's placeholder are left to the style's
    /// own fold: a normal placeholder of either style, and a real-name placeholder filled.
    @Test func placeholdersOfTheStyleInUseAndFilledOnesAreNotLeftovers() {
        #expect(fold(.suffix, recorded: suffixFile, local: ["x.nimbus": suffixFile]).repairs.isEmpty)
        #expect(fold(.realName, recorded: sparseFile, local: ["x": sparseFile]).repairs.isEmpty)
        var filled = sparseFile
        filled.mtime += 5
        let result = fold(.suffix, recorded: sparseFile, local: ["x": filled])
        #expect(result.repairs.allSatisfy { if case .convertPlaceholder = $0 { false } else { true } })
    }
}
