import NimbusVocabulary
import Testing
import NimbusSystem
import NimbusTestSupport
@testable import NimbusCore

private func rp(_ s: String) -> RelativePath { try! RelativePath(validating: s) }
private func file(size: Int64, inode: UInt64 = 1) -> FileMetadata {
    FileMetadata(kind: .file, size: size, mtime: 1_700_000_000_123_456_789, mode: 0o644, inode: inode, device: 1)
}

@Suite struct PlaceholderFormatTests {
    @Test func namesMapBothWays() {
        #expect(Placeholder.file(for: rp("dir/report.pdf")) == rp("dir/report.pdf.nimbus"))
        #expect(Placeholder.target(of: rp("dir/report.pdf.nimbus")) == rp("dir/report.pdf"))
        #expect(Placeholder.target(of: rp("dir/.nimbus")) == nil, "a bare suffix stands for nothing")
        #expect(Placeholder.target(of: rp("report.pdf")) == nil)
        #expect(Placeholder.file(for: .root) == nil)
        #expect(Placeholder.file(for: rp(String(repeating: "n", count: 250))) == nil, "the name would pass NAME_MAX")
    }

    /// −1.5 s is 23:59:58.5; the form written before (23:59:59.5) still matches, no other does.
    @Test func anMtimeBefore1970IsWrittenAtItsSecondAndTheOldFormStillMatches() {
        var early = file(size: 5)
        early.mtime = -1_500_000_000
        let text = String(decoding: Placeholder.contents(for: rp("old"), cloud: early), as: UTF8.self)
        #expect(text.contains("mtime = 1969-12-31T23:59:58.500000000Z\n"))
        func variant(_ time: String) -> [UInt8] {
            Array(text.replacing("1969-12-31T23:59:58.500000000Z", with: time).utf8)
        }
        #expect(Placeholder.matches(Array(text.utf8), for: rp("old"), cloud: early))
        #expect(Placeholder.matches(variant("1969-12-31T23:59:59.500000000Z"), for: rp("old"), cloud: early), "written before the fix")
        #expect(!Placeholder.matches(variant("1969-12-31T23:59:57.500000000Z"), for: rp("old"), cloud: early))
        #expect(!Placeholder.matches(Array(text.utf8), for: rp("other"), cloud: early))
        // A whole second, or a time after 1970, was always written right: one second off is not ours.
        var whole = early
        whole.mtime = -2_000_000_000
        let wholeText = String(decoding: Placeholder.contents(for: rp("old"), cloud: whole), as: UTF8.self)
        #expect(wholeText.contains("mtime = 1969-12-31T23:59:58.000000000Z\n"))
        let oneLate = Array(wholeText.replacing("23:59:58.000000000Z", with: "23:59:59.000000000Z").utf8)
        #expect(!Placeholder.matches(oneLate, for: rp("old"), cloud: whole))
        #expect(Placeholder.rfc3339(-500_000_000) == "1969-12-31T23:59:59.500000000Z")
    }

    @Test func contentsSayWhatTheFileIsAndParseBack() {
        let text = String(decoding: Placeholder.contents(for: rp("d/it's.txt"), cloud: file(size: 1234)), as: UTF8.self)
        #expect(text.hasPrefix("# Nimbus placeholder"))
        #expect(text.contains("size = 1234\n"))
        #expect(text.contains("mtime = 2023-11-14T22:13:20.123456789Z\n"))
        #expect(text.contains("download = nimbusctl download 'd/it'\\''s.txt'\n"), "the command must be safe to paste into a shell")
        let parsed = Placeholder.parse(Array(text.utf8))
        #expect(parsed?.size == 1234)
        #expect(parsed?.name == "it's.txt")
    }

    @Test func otherFilesAreNotPlaceholders() {
        #expect(Placeholder.parse(Array("size = 3\n".utf8)) == nil)
        #expect(Placeholder.parse([0xff, 0xfe]) == nil)
        #expect(Placeholder.parse(Array(repeating: 0x23, count: Placeholder.maximumSize + 1)) == nil)
    }
}

@Suite struct PlaceholderPlanTests {
    let source = file(size: 10, inode: 50)
    let placeholderFile = file(size: 200, inode: 7)

    @Test func aNewCloudFileBecomesAPlaceholderUnlessKept() {
        var plan = Plan()
        plan.actions = [.copy(rp("a"), to: .local, source: source, replacing: nil)]
        #expect(adaptForPlaceholders(plan, placeholders: [:], keepsLocalCopy: { _ in false }).actions
                == [.writePlaceholder(rp("a"), source: source, replacing: nil)])
        #expect(adaptForPlaceholders(plan, placeholders: [:], keepsLocalCopy: { _ in true }).actions == plan.actions)
        let stray = file(size: 180, inode: 9)
        #expect(adaptForPlaceholders(plan, placeholders: [:], strays: [rp("a"): stray], keepsLocalCopy: { _ in false }).actions
                == [.writePlaceholder(rp("a"), source: source, replacing: stray)])
    }

    @Test func anUpdateOfADownloadedFileIsDownloaded() {
        var plan = Plan()
        plan.actions = [.copy(rp("a"), to: .local, source: source, replacing: file(size: 3, inode: 4))]
        #expect(adaptForPlaceholders(plan, placeholders: [:], keepsLocalCopy: { _ in false }).actions == plan.actions)
    }

    @Test func placeholdersAreRewrittenRenamedOrRemovedButNeverUploaded() {
        var plan = Plan()
        let base = file(size: 200, inode: 7)
        plan.actions = [
            .rename(from: rp("old"), to: rp("new"), on: .local, expected: base),
            .remove(rp("gone"), on: .local, expected: base),
            .copy(rp("changed"), to: .local, source: source, replacing: base),
            .copy(rp("orphan"), to: .cloud, source: base, replacing: nil),
            .setMode(rp("chmod"), on: .local, source: source, expected: base),
        ]
        let placeholders = [rp("old"): placeholderFile, rp("gone"): placeholderFile, rp("changed"): placeholderFile,
                            rp("orphan"): placeholderFile, rp("chmod"): placeholderFile]
        #expect(adaptForPlaceholders(plan, placeholders: placeholders, keepsLocalCopy: { _ in false }).actions == [
            .renamePlaceholder(from: rp("old"), to: rp("new"), expected: placeholderFile),
            .removePlaceholder(rp("gone"), expected: placeholderFile),
            .writePlaceholder(rp("changed"), source: source, replacing: placeholderFile),
            .removePlaceholder(rp("orphan"), expected: placeholderFile),
            .writePlaceholder(rp("chmod"), source: source, replacing: placeholderFile),
        ])
    }

    @Test func aPinnedPlaceholderIsDownloadedThenRemoved() {
        var plan = Plan()
        plan.actions = [.copy(rp("a"), to: .local, source: source, replacing: file(size: 200, inode: 7))]
        #expect(adaptForPlaceholders(plan, placeholders: [rp("a"): placeholderFile], keepsLocalCopy: { _ in true }).actions == [
            .copy(rp("a"), to: .local, source: source, replacing: nil),
            .removePlaceholder(rp("a"), expected: placeholderFile),
        ])
    }
}

@Suite struct RateLimiterTests {
    @Test func aStormGetsTheLimitAndOneWarning() {
        var limiter = RateLimiter(limit: 30)
        var allowed = 0
        var warnings = 0
        // 1 000 opens within one second.
        for i in 0..<1_000 {
            switch limiter.admit(now: .origin + .milliseconds(i)) {
            case .allowed: allowed += 1
            case .refused(let first): if first { warnings += 1 }
            }
        }
        #expect(allowed <= 30 + 1, "one second refills half a token at 30 a minute")
        #expect(allowed >= 30)
        #expect(warnings == 1)
    }

    @Test func theBucketRefillsAndANewStormWarnsAgain() {
        var limiter = RateLimiter(limit: 2)
        #expect(limiter.admit(now: .origin) == .allowed)
        #expect(limiter.admit(now: .origin) == .allowed)
        #expect(limiter.admit(now: .origin) == .refused(firstOfStorm: true))
        #expect(limiter.admit(now: .origin + .nanoseconds(1)) == .refused(firstOfStorm: false))
        #expect(limiter.admit(now: .origin + .seconds(30)) == .allowed, "half a minute brings one download back")
        #expect(limiter.admit(now: .origin + .seconds(120)) == .allowed)
        #expect(limiter.admit(now: .origin + .seconds(120)) == .allowed)
        #expect(limiter.admit(now: .origin + .seconds(120)) == .refused(firstOfStorm: true), "the bucket was full again: a new storm")
    }
}

@Suite struct PlaceholderEditTests {
    @Test func anythingAddedMakesItContent() {
        let placeholder = Placeholder.contents(for: rp("a"), cloud: file(size: 5))
        #expect(Placeholder.parse(placeholder) != nil)
        #expect(Placeholder.parse(placeholder + Array("my notes".utf8)) == nil)
        #expect(Placeholder.parse(placeholder + Array("more\n".utf8)) == nil)
        #expect(Placeholder.parse(Array(placeholder.dropLast())) == nil)
    }
}

@Suite struct PlaceholderNameTests {
    @Test func everyNameGivesAParsablePlaceholderWithAShellWordForIt() throws {
        var random = SeededRandom.forTest("placeholder names")
        func next() -> UInt8 { UInt8(truncatingIfNeeded: random.next()) }
        for _ in 0..<2_000 {
            let bytes = (0..<Int(next() % 20 + 1)).map { _ in next() }.filter { $0 != 0 && $0 != UInt8(ascii: "/") }
            guard let path = try? RelativePath(validating: bytes.isEmpty ? [UInt8(ascii: "x")] : bytes) else { continue }
            let text = Placeholder.contents(for: path, cloud: file(size: 9))
            #expect(Placeholder.parse(text)?.size == 9, "seed \(random.seed): \(path.bytes)")
        }
        #expect(Placeholder.shellQuoted(Array("two\nlines".utf8)) == "$'two\\x0alines'")
        #expect(Placeholder.shellQuoted([0x63, 0xe9]) == "$'c\\xe9'")
        #expect(Placeholder.shellQuoted(Array("it's".utf8)) == "'it'\\''s'")
    }
}
