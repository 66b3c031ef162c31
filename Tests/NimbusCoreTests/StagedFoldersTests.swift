import NimbusVocabulary
import Testing
@testable import NimbusCore

/// `Plan.stagedFolders(on:)`: which new folders an upload builds whole in a staging folder
/// and publishes with one rename, and which are written as usual.
@Suite struct StagedFoldersTests {
    static func path(_ s: String) -> RelativePath { try! RelativePath(validating: s) }
    static let folder = FileMetadata(kind: .directory, size: 0, mtime: 1, mode: 0o755, inode: 1)
    static let file = FileMetadata(kind: .file, size: 3, mtime: 1, mode: 0o644, inode: 2)
    static let link = FileMetadata(kind: .symlink, size: 1, mtime: 1, mode: 0o777, inode: 3, symlinkTarget: [0x61])

    static func mkdir(_ p: String, _ side: Side = .cloud) -> Action { .makeDirectory(path(p), on: side, source: folder) }
    static func copy(_ p: String, _ side: Side = .cloud, replacing: FileMetadata? = nil) -> Action {
        .copy(path(p), to: side, source: file, replacing: replacing)
    }
    static func staged(_ actions: [Action], on side: Side = .cloud) -> Set<String> {
        var plan = Plan()
        plan.actions = actions
        return Set(plan.stagedFolders(on: side).map(\.description))
    }

    @Test func theTopMostNewFoldersHoldingOnlyNewFoldersAndFilesAreStaged() {
        let actions = [Self.mkdir("a"), Self.copy("a/1"), Self.mkdir("a/b"), Self.copy("a/b/2"), Self.mkdir("a/b/c"),
                       Self.mkdir("d"), Self.copy("d/3"), Self.copy("top"), Self.mkdir("empty")]
        #expect(Self.staged(actions) == ["a", "d", "empty"])
        #expect(Self.staged(actions, on: .local).isEmpty, "nothing is made in the local folder")
    }

    @Test func aFolderWithAnythingElseBeneathIsNotStagedButItsCleanSubfoldersAre() {
        let others: [Action] = [
            .makeSymlink(Self.path("a/x/l"), on: .cloud, source: Self.link, replacing: nil),
            .setMode(Self.path("a/x/f"), on: .cloud, source: Self.file, expected: Self.file),
            .rename(from: Self.path("old"), to: Self.path("a/x/f"), on: .cloud, expected: Self.file),
            .writePlaceholder(Self.path("a/x/f"), source: Self.file, replacing: nil),
            .record(Self.path("a/x/f"), local: Self.file, cloud: Self.file, hash: nil),
            Self.copy("a/x/f", replacing: Self.file),
            Self.copy("a/x/f", .local),
            Self.mkdir("a/x/f", .local),
        ]
        for other in others {
            let actions = [Self.mkdir("a"), Self.copy("a/1"), Self.mkdir("a/x"), other, Self.mkdir("a/y"), Self.copy("a/y/2")]
            #expect(Self.staged(actions) == ["a/y"], "\(other)")
        }
    }

    @Test func aFolderNamedByAnotherActionIsNotStaged() {
        let moved: [Action] = [Self.mkdir("a"), Self.copy("a/1"),
                               .rename(from: Self.path("a"), to: Self.path("b"), on: .cloud, expected: Self.folder)]
        #expect(Self.staged(moved).isEmpty)
        let removedAbove: [Action] = [Self.mkdir("a/b"), Self.copy("a/b/1"),
                                      .removeDirectory(Self.path("a"), on: .cloud, expected: Self.folder)]
        #expect(Self.staged(removedAbove).isEmpty, "a removal above reaches it")
        let movedAway: [Action] = [.preserveConflict(Self.path("a"), as: Self.path("a (conflict)"), on: .cloud, expected: Self.file),
                                   Self.mkdir("a"), Self.copy("a/1")]
        #expect(Self.staged(movedAway).isEmpty, "something stood at its name in this pass")
    }

    @Test func aFolderMadeAfterSomethingBeneathItIsNotStaged() {
        #expect(Self.staged([Self.copy("a/1"), Self.mkdir("a")]).isEmpty)
        #expect(Self.staged([Self.mkdir("a/b"), Self.mkdir("a")]) == ["a/b"])
        #expect(Self.staged([Self.mkdir("a"), Self.mkdir("a")]).isEmpty, "made twice")
    }
}
