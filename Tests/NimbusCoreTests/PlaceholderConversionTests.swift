import NimbusVocabulary
import Testing
import NimbusSystem
@testable import NimbusCore
import NimbusTestSupport

private func rp(_ s: String) -> RelativePath { try! RelativePath(validating: s) }

/// Switching a pair between placeholder styles (issue 16 item 8): every placeholder is
/// rewritten in the other style, none is downloaded, no name is taken from another file,
/// and the names one conversion frees are used by the next.
@Suite struct PlaceholderConversionTests {
    /// A pair of tracked placeholders in `style`, with the local scan as it is.
    struct Pair {
        var records: [RelativePath: PlaceholderRecord] = [:]
        var local: [RelativePath: FileMetadata] = [:]
        var nextInode: UInt64 = 100

        mutating func placeholder(_ name: String, style: PlaceholderStyle, size: Int64 = 10) {
            nextInode += 1
            let meta = FileMetadata(kind: .file, size: style == .suffix ? 180 : size, mtime: 1_000, mode: 0o644, inode: nextInode, device: 1)
            let cloud = FileMetadata(kind: .file, size: size, mtime: 1_000, mode: 0o644, inode: nextInode + 1000, device: 2)
            records[rp(name)] = PlaceholderRecord(base: BaseEntry(local: meta, cloud: cloud), isPlaceholder: true)
            local[style.file(for: rp(name))!] = meta
        }

        mutating func userFile(_ name: String) {
            nextInode += 1
            local[rp(name)] = FileMetadata(kind: .file, size: 5, mtime: 1_000, mode: 0o644, inode: nextInode, device: 1)
            records[rp(name)] = PlaceholderRecord(base: BaseEntry(local: local[rp(name)]!, cloud: local[rp(name)]!), isPlaceholder: false)
        }

        /// Carries the actions out as the executor would: the new placeholder is written
        /// (its name must be free), then the old one removed.
        mutating func apply(_ conversion: PlaceholderConversion, from: PlaceholderStyle) throws {
            for action in conversion.actions {
                guard case .convertPlaceholder(let path, let to, let expected, let cloud) = action else {
                    throw HarnessFailure("a conversion plans only conversions, not \(action)")
                }
                let old = from.file(for: path)!, new = to.file(for: path)!
                guard local[old] == expected else { throw HarnessFailure("\(old) is not as planned") }
                guard old == new || local[new] == nil else { throw HarnessFailure("\(new) is taken when \(path) is converted") }
                nextInode += 1
                let written = FileMetadata(kind: .file, size: to == .suffix ? 180 : cloud.size, mtime: cloud.mtime, mode: 0o644,
                                           inode: nextInode, device: 1)
                local[old] = nil
                local[new] = written
                records[path]!.base.local = written
            }
        }
    }

    @Test func everyPlaceholderIsRewrittenInTheOtherStyleWithoutADownload() throws {
        var pair = Pair()
        pair.placeholder("a", style: .suffix)
        pair.placeholder("d/b.txt", style: .suffix)
        let conversion = planPlaceholderConversion(from: .suffix, to: .realName, records: pair.records, local: pair.local)
        #expect(conversion.blocked.isEmpty)
        #expect(conversion.actions.map(\.path) == [rp("a"), rp("d/b.txt")])
        try pair.apply(conversion, from: .suffix)
        #expect(Set(pair.local.keys) == [rp("a"), rp("d/b.txt")])
        let back = planPlaceholderConversion(from: .realName, to: .suffix, records: pair.records, local: pair.local)
        try pair.apply(back, from: .realName)
        #expect(Set(pair.local.keys) == [rp("a.nimbus"), rp("d/b.txt.nimbus")])
    }

    /// `x` and a cloud file `x.nimbus`: each style's names overlap the other's, so the order
    /// matters both ways.
    @Test(arguments: [PlaceholderStyle.suffix, .realName])
    func aFileAndItsSuffixNameConvertInTheOrderThatFreesTheNames(_ from: PlaceholderStyle) throws {
        let to: PlaceholderStyle = from == .suffix ? .realName : .suffix
        var pair = Pair()
        pair.placeholder("x", style: from)
        pair.placeholder("x.nimbus", style: from)
        pair.placeholder("x.nimbus.nimbus", style: from)
        let conversion = planPlaceholderConversion(from: from, to: to, records: pair.records, local: pair.local)
        #expect(conversion.blocked.isEmpty, "\(conversion.blocked)")
        try pair.apply(conversion, from: from)
        #expect(Set(pair.local.keys) == Set(["x", "x.nimbus", "x.nimbus.nimbus"].map { to.file(for: rp($0))! }))
    }

    @Test func aNameTakenByAnotherFileOrTooLongOrAChangedPlaceholderBlocksOnlyThatOne() throws {
        var pair = Pair()
        pair.placeholder("mine", style: .realName)
        pair.userFile("mine.nimbus")
        pair.placeholder(String(repeating: "n", count: 250), style: .realName)
        pair.placeholder("changed", style: .realName)
        pair.local[rp("changed")]!.size = 3  // written since
        pair.placeholder("fine", style: .realName)
        let conversion = planPlaceholderConversion(from: .realName, to: .suffix, records: pair.records, local: pair.local)
        #expect(conversion.blocked == [rp("mine"): .nameTaken(rp("mine.nimbus")), rp(String(repeating: "n", count: 250)): .noName,
                                       rp("changed"): .changed])
        #expect(conversion.actions.map(\.path) == [rp("fine")])
        // A real file beside a suffix placeholder (a download in progress) keeps it suffixed.
        var suffixed = Pair()
        suffixed.placeholder("x", style: .suffix)
        suffixed.local[rp("x")] = FileMetadata(kind: .file, size: 10, mtime: 1, mode: 0o644, inode: 7, device: 1)
        #expect(planPlaceholderConversion(from: .suffix, to: .realName, records: suffixed.records, local: suffixed.local).blocked
                == [rp("x"): .nameTaken(rp("x"))])
    }

    /// Seeded: random names (many clashing), both ways and back: every placeholder ends in
    /// the target style unless blocked, nothing is overwritten, and the round trip restores
    /// the original names.
    @Test func randomRoundTripsRestoreEveryName() throws {
        let names = ["a", "a.nimbus", "a.nimbus.nimbus", "b", "b.nimbus", "d/a", "d/a.nimbus"]
        for seed in UInt64(1)...500 {
            var random = SeededRandom(seed: seed)
            var pair = Pair()
            for name in names where Bool.random(using: &random) { pair.placeholder(name, style: .suffix) }
            let before = Set(pair.local.keys)
            let there = planPlaceholderConversion(from: .suffix, to: .realName, records: pair.records, local: pair.local)
            #expect(there.blocked.isEmpty, "seed \(seed): \(there.blocked)")
            try pair.apply(there, from: .suffix)
            let back = planPlaceholderConversion(from: .realName, to: .suffix, records: pair.records, local: pair.local)
            #expect(back.blocked.isEmpty, "seed \(seed): \(back.blocked)")
            try pair.apply(back, from: .realName)
            #expect(Set(pair.local.keys) == before, "seed \(seed)")
        }
    }
}
