import Glibc
import NimbusVocabulary
import Testing
@testable import NimbusSystem

/// The write protocol of a shared network cloud (DESIGN §3), walked on a local disk: another
/// device's same-size, same-mtime rewrite (what a client cache shows as unchanged) is found by
/// content once the file is moved aside, put back, and nothing is installed or deleted.
@Suite struct SharedCloudWriteTests {
    static let moveAside = WriteProtocol(replace: .moveAside, create: .hardLink, verifiesContent: true)
    static let exchange = WriteProtocol(replace: .exchange, create: .renameNoReplace, verifiesContent: true)
    static let claim = WriteProtocol(replace: .moveAside, create: .exclusiveOpen, verifiesContent: true)

    /// `dst/f` synced as "version one", then rewritten in place by "another device" with the
    /// same size and mtime: metadata cannot tell. Returns the synced metadata and hash.
    private func sharedFileRewrittenBehindTheCache(_ pair: Pair) throws -> (FileMetadata, ContentHash) {
        try pair.scratch.write("dst/f", Array("version one".utf8))
        let synced = try #require(try pair.destination.metadata(of: path("f")))
        let hash = try pair.destination.contentHash(of: path("f"))
        try pair.scratch.write("dst/f", Array("VERSION TWO".utf8))
        try pair.destination.setAttributes(path("f"), mode: nil, mtime: synced.mtime)
        #expect(try pair.destination.metadata(of: path("f"))?.isSame(as: synced) == true)
        return (synced, hash)
    }

    @Test(arguments: [moveAside, exchange, claim])
    func aReplaceOfAnotherDevicesVersionIsRefusedAndThatVersionStays(_ writeProtocol: WriteProtocol) throws {
        try Pair.with { pair in
            pair.destination.adopt(writeProtocol)
            let (synced, hash) = try sharedFileRewrittenBehindTheCache(pair)
            try pair.scratch.write("src/f", Array("this device's edit".utf8))
            let expected = try #require(try pair.source.metadata(of: path("f")))
            let prepared = try pair.destination.prepareCopy(of: path("f"), from: pair.source, expected: expected,
                                                            durable: true) { _ in }
            #expect(throws: CopyError.notTheSyncedVersion(try path("f"), keptAt: nil)) {
                try pair.destination.install(prepared, at: path("f"), replacing: synced, expectedHash: hash,
                                             displacedTo: path(".nimbus/versions/f/v1"), durable: true)
            }
            #expect(try pair.scratch.read("dst/f") == Array("VERSION TWO".utf8))
            #expect(try pair.temporaryFiles().isEmpty)
            #expect((try? pair.scratch.names(in: "dst/.nimbus/versions/f"))?.isEmpty ?? true)

            // The version last synced is replaced as before.
            let again = try pair.destination.install(
                try pair.destination.prepareCopy(of: path("f"), from: pair.source, expected: expected, durable: true) { _ in },
                at: path("f"), replacing: try #require(try pair.destination.metadata(of: path("f"))),
                expectedHash: try pair.destination.contentHash(of: path("f")),
                displacedTo: path(".nimbus/versions/f/v2"), durable: true)
            #expect(again.size == expected.size)
            #expect(try pair.scratch.read("dst/f") == Array("this device's edit".utf8))
            #expect(try pair.scratch.read("dst/.nimbus/versions/f/v2") == Array("VERSION TWO".utf8))
        }
    }

    @Test func aDeleteOfAnotherDevicesVersionIsRefusedAndThatVersionStays() throws {
        try Pair.with { pair in
            pair.destination.adopt(Self.moveAside)
            let (synced, hash) = try sharedFileRewrittenBehindTheCache(pair)
            try pair.destination.makeDirectory(path(".nimbus"), mode: 0o755)
            #expect(throws: CopyError.notTheSyncedVersion(try path("f"), keptAt: nil)) {
                try pair.destination.moveAside(path("f"), to: path(".nimbus/v1"), expected: synced, hash: hash)
            }
            #expect(try pair.scratch.read("dst/f") == Array("VERSION TWO".utf8))
            #expect(try pair.destination.metadata(of: path(".nimbus/v1")) == nil)

            let current = try #require(try pair.destination.metadata(of: path("f")))
            try pair.destination.moveAside(path("f"), to: path(".nimbus/v1"), expected: current,
                                           hash: try pair.destination.contentHash(of: path("f")))
            #expect(try pair.destination.metadata(of: path("f")) == nil)
            #expect(try pair.scratch.read("dst/.nimbus/v1") == Array("VERSION TWO".utf8))
        }
    }

    /// An rclone mount numbers inodes by path: the file moved aside has another inode than the
    /// one synced, whatever its content. Its content is what decides: the synced version is
    /// replaced (kept in the versions store), not made a conflict. Before, every replace on
    /// such a mount was refused and became a conflict copy.
    @Test func aFileMovedAsideUnderAnotherInodeNumberIsTheSyncedVersionWhenItsContentIs() throws {
        try Pair.with { pair in
            pair.destination.adopt(Self.moveAside)
            try pair.scratch.write("dst/f", Array("version one".utf8))
            let synced = try #require(try pair.destination.metadata(of: path("f")))
            let hash = try pair.destination.contentHash(of: path("f"))
            try pair.destination.makeDirectory(path(".nimbus"), mode: 0o755)
            try pair.destination.rename(path("f"), to: path(".nimbus/v1"), replacing: false)
            var numberedByPath = synced
            numberedByPath.inode = synced.inode &+ 1
            try pair.destination.withRoot { root in
                try Installer(root: root, writeProtocol: Self.moveAside)
                    .verifyMoved(path(".nimbus/v1"), from: path("f"), expected: numberedByPath, hash: hash)
            }
            #expect(try pair.scratch.read("dst/.nimbus/v1") == Array("version one".utf8))
            #expect(try pair.destination.metadata(of: path("f")) == nil)

            // Another content under the same size is still another device's version: put back.
            try pair.scratch.write("dst/.nimbus/v1", Array("VERSION TWO".utf8))
            #expect(throws: CopyError.notTheSyncedVersion(try path("f"), keptAt: nil)) {
                try pair.destination.withRoot { root in
                    try Installer(root: root, writeProtocol: Self.moveAside)
                        .verifyMoved(path(".nimbus/v1"), from: path("f"), expected: numberedByPath, hash: hash)
                }
            }
            #expect(try pair.scratch.read("dst/f") == Array("VERSION TWO".utf8))
        }
    }

    @Test func aClaimedNameIsNeverReplaced() throws {
        try Scratch.with { scratch in
            try scratch.write("new", Array("mine".utf8))
            try scratch.write("taken", Array("someone else's".utf8))
            #expect(throws: Errno.fileExists) { try scratch.directory.claimAndRename("new", to: "taken", in: scratch.directory) }
            #expect(try scratch.read("taken") == Array("someone else's".utf8))
            try scratch.directory.claimAndRename("new", to: "free", in: scratch.directory)
            #expect(try scratch.read("free") == Array("mine".utf8))
            #expect((try? scratch.directory.metadata(of: "new")) == nil)
        }
    }

    @Test func probingALocalDiskLeavesNothingBehind() throws {
        try Scratch.with { scratch in
            let fs = DiskFileSystem(root: scratch.path)
            let capabilities = try fs.probeCapabilities(in: path(".nimbus/tmp"))
            #expect(!capabilities.isNetwork, "\(capabilities)")
            #expect(capabilities.hardLinks, "\(capabilities)")
            #expect(capabilities.mtimePrecision <= .milliseconds(1), "\(capabilities)")
            #expect(try scratch.names(in: ".nimbus/tmp").isEmpty)
        }
    }
}
