import Glibc
import NimbusTestSupport
import NimbusVocabulary
import Testing
@testable import NimbusSystem

// Replacing a file: the old one to the versions store or removed, never a stale or open one.
extension CopierTests {
    @Test(arguments: [true, false])
    func aReplaceMovesTheOldFileToTheVersionsStore(exchange: Bool) throws {
        try Pair.with { pair in
            try pair.scratch.write("dst/file", Array("old".utf8))
            try pair.scratch.write("src/file", Array("new 1".utf8))
            let old = try #require(try pair.destination.metadata(of: path("file")))
            let first = try install(pair, "file", replacing: old, displacedTo: "versions/v/t-dev.nimbus-version", exchange: exchange)
            #expect(try pair.scratch.read("dst/file") == Array("new 1".utf8))
            #expect(try pair.scratch.read("dst/versions/v/t-dev.nimbus-version") == Array("old".utf8))

            // The same versions name again: the earlier version is kept, the new one gets a number
            // before its suffix (the versions store lists it by that suffix).
            try pair.scratch.write("src/file", Array("new 2".utf8))
            _ = try install(pair, "file", replacing: first, displacedTo: "versions/v/t-dev.nimbus-version", exchange: exchange)
            #expect(try pair.scratch.read("dst/file") == Array("new 2".utf8))
            #expect(try pair.scratch.read("dst/versions/v/t-dev.nimbus-version") == Array("old".utf8))
            #expect(try pair.scratch.read("dst/versions/v/t-dev (2).nimbus-version") == Array("new 1".utf8))
            #expect(try pair.temporaryFiles().isEmpty)
        }
    }

    @Test(arguments: [true, false])
    func aReplaceWithoutVersionsStoreRemovesTheOldFile(exchange: Bool) throws {
        try Pair.with { pair in
            try pair.scratch.write("dst/file", Array("old".utf8))
            try pair.scratch.write("src/file", Array("new".utf8))
            let old = try #require(try pair.destination.metadata(of: path("file")))
            _ = try install(pair, "file", replacing: old, displacedTo: nil, exchange: exchange)
            #expect(try pair.scratch.read("dst/file") == Array("new".utf8))
            #expect(try pair.scratch.names(in: "dst") == [Array("file".utf8), Array(".nimbus".utf8)])
            #expect(try pair.temporaryFiles().isEmpty)
        }
    }

    @Test(arguments: [true, false])
    func aStaleReplaceLeavesTheDestinationAlone(exchange: Bool) throws {
        try Pair.with { pair in
            try pair.scratch.write("dst/file", Array("old".utf8))
            try pair.scratch.write("src/file", Array("new".utf8))
            let old = try #require(try pair.destination.metadata(of: path("file")))
            try pair.scratch.write("dst/file", Array("changed by someone else".utf8))
            #expect(throws: CopyError.destinationChanged(try path("file"))) {
                try install(pair, "file", replacing: old, displacedTo: "versions/file~1", exchange: exchange)
            }
            #expect(try pair.scratch.read("dst/file") == Array("changed by someone else".utf8))
            #expect(!pair.scratch.exists("dst/versions/file~1"))
            #expect(try pair.temporaryFiles().isEmpty)

            // A destination that vanished is a change too.
            try pair.scratch.directory.removeFile("dst/file")
            #expect(throws: CopyError.destinationChanged(try path("file"))) {
                try install(pair, "file", replacing: old, displacedTo: nil, exchange: exchange)
            }
            #expect(try pair.temporaryFiles().isEmpty)
        }
    }

    /// The progress callback runs between two chunks of the copy: writing to the source there
    /// is a deterministic "edit during the copy". The second case keeps size and mtime (a
    /// same-size rewrite, then the old mtime put back) and is caught by the ctime.

    @Test(arguments: [true, false]) func aFileOpenForWritingIsNotReplaced(exchange: Bool) throws {
        try Pair.with { pair in
            try pair.scratch.write("src/file", Array("new".utf8))
            try pair.scratch.write("dst/file", Array("old".utf8))
            let file = try path("file")
            let old = try #require(try pair.destination.metadata(of: file))
            let writer = try FileDescriptor.open("dst/file", [.writeOnly, .append], relativeTo: pair.scratch.directory)
            try writer.closeAfter { () throws in
                #expect(pair.destination.isOpenForWriting(file))
                #expect(throws: CopyError.destinationInUse(file)) {
                    try install(pair, "file", replacing: old, displacedTo: nil, exchange: exchange, refusingOpenWriters: true)
                }
                #expect(try pair.scratch.read("dst/file") == Array("old".utf8))
                #expect(try pair.temporaryFiles().isEmpty)
            }
            // Polled: a child process another test spawns at that moment holds a copy of every
            // descriptor between its fork and its exec.
            #expect(Polling.spin(timeout: .seconds(10), interval: .milliseconds(1)) { !pair.destination.isOpenForWriting(file) })
            _ = try install(pair, "file", replacing: old, displacedTo: nil, exchange: exchange, refusingOpenWriters: true)
            #expect(try pair.scratch.read("dst/file") == Array("new".utf8))
        }
    }

    /// Holes stay holes: only the data ranges are written (at the start, in the middle, none at
    /// the end), the size is kept, and the copy reads exactly as the source does.
    /// A destination checked by content (a shared network cloud) gets the hash of what was
    /// copied from the source, dense or sparse, without reading the temporary file back.

    private func install(_ pair: Pair, _ name: String, replacing: FileMetadata, displacedTo: String?,
                         exchange: Bool, refusingOpenWriters: Bool = false) throws -> FileMetadata {
        let expected = try #require(try pair.source.metadata(of: path(name)))
        let copy = try pair.destination.prepareCopy(of: path(name), from: pair.source, expected: expected,
                                                    durable: true) { _ in }
        return try pair.destination.withRoot { root in
            try Installer(root: root, refusesOpenWriters: refusingOpenWriters, exchangeSupported: exchange)
                .install(copy, at: path(name), replacing: replacing, displacedTo: try displacedTo.map(path),
                         durable: true)
        }
    }
}
