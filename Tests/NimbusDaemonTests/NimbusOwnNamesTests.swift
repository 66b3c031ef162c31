import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
import NimbusVocabulary
@testable import NimbusDaemon

/// Nimbus's own names in the local folder (the root marker, a copy's temporary file, the
/// holding folder of kept deletions and what is in it) are never shown or handled as the
/// user's files: `nimbusctl info`, `ls`, `pin`, `evict` and `download` do not know them.
@Suite struct NimbusOwnNamesTests {
    static let holding = RootMarkers.deletedHolding
    static let kept = holding.appending(rp("d/gone.txt"))
    static let copyTemporary = rp(".nimbus-tmp-0123456789abcdef")

    /// A synced pair where a sync deleted `d/gone.txt` (kept in the holding folder) and a
    /// copy's temporary file was left at the top.
    static func pairWithOwnNames() throws -> Pair {
        let pair = Pair()
        try pair.local.write(rp("d/gone.txt"), Array("deleted in the cloud\n".utf8))
        try pair.local.write(rp("d/stays.txt"), Array("still here\n".utf8))
        pair.engine.start()
        try #require(pair.content(pair.cloud, "d/gone.txt") != nil)
        try pair.cloud.removeFile(rp("d/gone.txt"))
        pair.sync()
        try #require(pair.content(pair.local, kept.description) == "deleted in the cloud\n", "the deleted file is kept in the holding folder")
        try pair.local.write(copyTemporary, Array("half a copy".utf8))
        try #require(pair.local.snapshot()[RootMarkers.local] != nil)
        return pair
    }

    @Test func infoDoesNotShowNimbusOwnNames() throws {
        let pair = try Self.pairWithOwnNames()
        for own in [Self.holding, Self.kept, Self.kept.parent, Self.copyTemporary, RootMarkers.local] {
            #expect(pair.engine.entry(own) == nil, "\(own) is Nimbus's own, not a file of the user's")
        }
        #expect(pair.engine.entry(rp("d/stays.txt"))?.state == .downloaded)
    }

    /// Each own name says what it is (for `nimbusctl info`); the user's names, however close,
    /// are not Nimbus's.
    @Test func ownNamesSayWhatTheyAre() {
        let owns: [(RelativePath, String)] = [
            (RootMarkers.local, "the marker Nimbus keeps to recognise the local folder it syncs"),
            (rp(".nimbus"), "the name of the folder where Nimbus keeps its own data in the cloud folder"),
            (rp(".nimbus/versions/a.txt"), "inside .nimbus, the name of the folder where Nimbus keeps its own data"),
            (Self.holding, "the folder where Nimbus keeps local files a sync deleted"),
            (Self.kept, "in .nimbus-tmp-deleted, where Nimbus keeps local files a sync deleted"),
            (RootMarkers.deletedHolding(2).appending(rp("x")), "in .nimbus-tmp-deleted-2, where"),
            (Self.copyTemporary, "a temporary file of a copy Nimbus is making"),
            (Self.copyTemporary.appending(rp("staged/a.txt")), "inside .nimbus-tmp-0123456789abcdef, a temporary file of a copy"),
            (rp("d/.nimbus-tmp-write-1"), "a name Nimbus keeps for its temporary files"),
        ]
        for (path, what) in owns {
            #expect(RootMarkers.ownName(path)?.hasPrefix(what) == true, "\(path): \(RootMarkers.ownName(path) ?? "nil")")
        }
        for users in [".nimbusignore", "d/.nimbus-root", ".nimbus-rootx", "notes.nimbus-tmp-1", "d/gone.txt", "d/.nimbus", ".nimbusx", "a.nimbus"] {
            #expect(RootMarkers.ownName(rp(users)) == nil, "\(users) is the user's")
        }
    }

    @Test func listingDoesNotShowNimbusOwnNames() throws {
        let pair = try Self.pairWithOwnNames()
        for recursive in [false, true] {
            for own in [Self.holding, Self.kept.parent] {
                #expect(throws: EngineRequestError.self, "listing \(own) (recursive: \(recursive))") {
                    try pair.engine.listEntries(under: own, recursive: recursive)
                }
            }
            let listed = try pair.engine.listEntries(under: .root, recursive: recursive).map(\.path)
            #expect(listed.allSatisfy { !Self.holding.contains($0) && $0 != Self.copyTemporary && $0 != RootMarkers.local }, "\(listed)")
            #expect(listed.contains(rp("d")))
        }
    }

    @Test func nimbusOwnNamesCannotBePinnedEvictedOrDownloaded() throws {
        let pair = try Self.pairWithOwnNames()
        for own in [Self.holding, Self.kept, Self.copyTemporary] {
            #expect(throws: EngineRequestError.self, "pin \(own)") { try pair.engine.pin(own) }
            #expect(throws: EngineRequestError.self, "evict \(own)") { try pair.engine.evict(own) }
            #expect(throws: EngineRequestError.self, "download \(own)") { try pair.engine.download(own, .explicit) }
        }
        #expect(pair.content(pair.local, Self.kept.description) == "deleted in the cloud\n")
    }
}
