import Glibc
import NimbusTestSupport
import NimbusVocabulary
import Testing
@testable import NimbusSystem

/// Two roots in one scratch directory: `src` and `dst` (temporary files in `dst/.nimbus/tmp`,
/// as on the cloud side, unless told otherwise).
struct Pair {
    let scratch: Scratch
    let source: DiskFileSystem
    let destination: DiskFileSystem

    static func with(temporaryDirectory: String? = ".nimbus/tmp", _ body: (Pair) throws -> Void) throws {
        try Scratch.with { scratch in
            try scratch.directory.makeDirectory("src")
            try scratch.directory.makeDirectory("dst")
            let source = DiskFileSystem(root: scratch.path.appending("src"), temporaryDirectory: nil)
            let destination = DiskFileSystem(root: scratch.path.appending("dst"),
                                              temporaryDirectory: try temporaryDirectory.map(path))
            try body(Pair(scratch: scratch, source: source, destination: destination))
        }
    }

    /// Copies `src/<name>` to `dst/<name>` as the engine would.
    func copy(_ name: String, replacing: FileMetadata? = nil, displacedTo: String? = nil) throws -> FileMetadata {
        let expected = try #require(try source.metadata(of: path(name)))
        let prepared = try destination.prepareCopy(of: path(name), from: source, expected: expected,
                                                   durable: true) { _ in }
        return try destination.install(prepared, at: path(name), replacing: replacing,
                                       displacedTo: try displacedTo.map(path), durable: true)
    }

    func temporaryFiles() throws -> [RelativePath] {
        try destination.scan(.root) { _ in true }.entries.map(\.path).filter { TemporaryName.isTemporary($0.name) }
    }
}

@Suite struct CopierTests {
    @Test func keepsContentModeAndNanosecondMtime() throws {
        try Pair.with { pair in
            let content = randomBytes(3 << 20 + 17, seed: 1)
            try pair.scratch.write("src/file", content, mode: 0o640)
            try pair.scratch.directory.setModificationTime(of: "src/file", 1_500_000_000_987_654_321)
            let expected = try #require(try pair.source.metadata(of: path("file")))

            var reported: [Int64] = []
            let copy = try pair.destination.prepareCopy(of: path("file"), from: pair.source, expected: expected,
                                                        durable: true) { reported.append($0) }
            #expect(copy.bytesCopied == Int64(content.count))
            #expect(copy.source == expected)
            #expect(copy.temporary.parent == (try path(".nimbus/tmp")))
            #expect(TemporaryName.isTemporary(copy.temporary.name))
            #expect(reported.last == Int64(content.count) && reported == reported.sorted())
            let temporary = try #require(try pair.destination.metadata(of: copy.temporary))
            #expect(temporary.mode == 0o640 && temporary.mtime == expected.mtime && temporary.size == expected.size)

            let installed = try pair.destination.install(copy, at: path("file"), replacing: nil, displacedTo: nil,
                                                         durable: true)
            #expect(installed.looksLike(expected))
            #expect(installed == (try pair.destination.metadata(of: path("file"))))
            #expect(try pair.scratch.read("dst/file") == content)
            #expect(try pair.temporaryFiles().isEmpty)
        }
    }

    @Test func aNameThatIsNotUTF8CopiesUnchanged() throws {
        try Pair.with(temporaryDirectory: nil) { pair in
            let odd: [UInt8] = [0x66, 0xFF, 0xFE]
            try pair.scratch.directory.makeDirectory("src/d")
            try pair.scratch.directory.makeDirectory("dst/d")
            try pair.scratch.write(SystemPath(bytes: Array("src/d/".utf8) + odd), Array("odd".utf8))
            let name = try path("d").appending(name: odd)
            let expected = try #require(try pair.source.metadata(of: name))
            let copy = try pair.destination.prepareCopy(of: name, from: pair.source, expected: expected,
                                                        durable: false) { _ in }
            #expect(copy.temporary.parent == (try path("d")))  // No temporary directory: next to the file.
            _ = try pair.destination.install(copy, at: name, replacing: nil, displacedTo: nil, durable: false)
            #expect(try pair.scratch.names(in: "dst/d") == [odd])
            #expect(try pair.scratch.read(SystemPath(bytes: Array("dst/d/".utf8) + odd)) == Array("odd".utf8))
        }
    }

    @Test func aCreateNeverReplacesAnExistingFile() throws {
        try Pair.with { pair in
            try pair.scratch.write("src/file", Array("mine".utf8))
            try pair.scratch.write("dst/file", Array("theirs".utf8))
            #expect(throws: CopyError.destinationChanged(try path("file"))) { try pair.copy("file") }
            #expect(try pair.scratch.read("dst/file") == Array("theirs".utf8))
            #expect(try pair.temporaryFiles().isEmpty)
        }
    }

    @Test(arguments: [("t-dev.nimbus-version", "t-dev (2).nimbus-version"), ("a", "a (2)"),
                      (".profile", ".profile (2)"), ("a.tar.gz", "a.tar (2).gz")])
    func aTakenNameIsNumberedBeforeItsExtension(name: String, numbered: String) {
        #expect(Installer.numbered(SystemPath(name), 2) == SystemPath(numbered))
    }

    @Test(arguments: [true, false])
    func aSourceChangedDuringTheCopyIsRefused(grow: Bool) throws {
        try Pair.with { pair in
            let size = 2 * ContentTransfer.chunkSize + 5
            try pair.scratch.write("src/big", randomBytes(size, seed: 2))
            // Quiet for an hour, so only the edit made during the copy can stop it.
            try pair.source.setAttributes(path("big"), mode: nil, mtime: try pair.source.metadata(of: path("big"))!.mtime - 3_600_000_000_000)
            let expected = try #require(try pair.source.metadata(of: path("big")))
            var calls = 0
            #expect(throws: CopyError.sourceChanged(try path("big"))) {
                _ = try pair.destination.prepareCopy(of: path("big"), from: pair.source, expected: expected,
                                                     durable: false) { _ in
                    calls += 1
                    guard calls == 1 else { return }
                    let file = try! FileDescriptor.open("src/big", [.writeOnly], relativeTo: pair.scratch.directory)
                    try! file.closeAfter {
                        if grow {
                            try [1, 2, 3].withUnsafeBytes { try file.writeAll(toAbsoluteOffset: Int64(size), $0) }
                        } else {
                            try [0, 0, 0].withUnsafeBytes { try file.writeAll(toAbsoluteOffset: 0, $0) }
                            try file.setModificationTime(expected.mtime)
                        }
                    }
                }
            }
            #expect(calls > 1)  // The copy went on after the edit: it happened mid-copy.
            #expect(try pair.temporaryFiles().isEmpty)
        }
    }

    /// A file written moments ago and still open for writing is mid-rewrite: not copied yet.
    /// Once quiet it is copied even while a process keeps it open (a log).
    @Test func aFileStillBeingWrittenWaitsUntilQuiet() throws {
        try Pair.with { pair in
            try pair.scratch.write("src/log", Array("line\n".utf8))
            let writer = try FileDescriptor.open("src/log", [.writeOnly, .append], relativeTo: pair.scratch.directory)
            try writer.closeAfter {
                try writer.writeAll(Array("more\n".utf8))
                let fresh = try #require(try pair.source.metadata(of: path("log")))
                #expect(throws: CopyError.sourceChanged(try path("log"))) {
                    _ = try pair.destination.prepareCopy(of: path("log"), from: pair.source, expected: fresh, durable: false) { _ in }
                }
                try pair.source.setAttributes(path("log"), mode: nil, mtime: fresh.mtime - 3_600_000_000_000)
                let quiet = try #require(try pair.source.metadata(of: path("log")))
                let copy = try pair.destination.prepareCopy(of: path("log"), from: pair.source, expected: quiet, durable: false) { _ in }
                #expect(copy.bytesCopied == 10)
                pair.destination.discard(copy)
            }
        }
    }

    @Test func aSourceThatIsNotAsExpectedIsNotCopied() throws {
        try Pair.with { pair in
            try pair.scratch.write("src/file", Array("content".utf8))
            let expected = try #require(try pair.source.metadata(of: path("file")))
            try pair.scratch.directory.setModificationTime(of: "src/file", expected.mtime + 1)
            #expect(throws: CopyError.sourceChanged(try path("file"))) {
                _ = try pair.destination.prepareCopy(of: path("file"), from: pair.source, expected: expected,
                                                     durable: false) { _ in }
            }

            try pair.scratch.directory.removeFile("src/file")
            #expect(throws: CopyError.sourceChanged(try path("file"))) {
                _ = try pair.destination.prepareCopy(of: path("file"), from: pair.source, expected: expected,
                                                     durable: false) { _ in }
            }
            try pair.scratch.directory.makeSymlink("src/file", target: Array("elsewhere".utf8))
            #expect(throws: CopyError.sourceChanged(try path("file"))) {
                _ = try pair.destination.prepareCopy(of: path("file"), from: pair.source, expected: expected,
                                                     durable: false) { _ in }
            }

            #expect(mkfifoat(pair.scratch.directory.rawValue, "src/fifo", 0o644) == 0)
            let fifo = try #require(try pair.source.metadata(of: path("fifo")))
            #expect(throws: CopyError.notAFile(try path("fifo"))) {
                _ = try pair.destination.prepareCopy(of: path("fifo"), from: pair.source, expected: fifo,
                                                     durable: false) { _ in }
            }
            #expect(try pair.temporaryFiles().isEmpty)
        }
    }

    @Test func anInstallThatFailsRemovesTheTemporaryFile() throws {
        try Pair.with { pair in
            try pair.scratch.write("src/file", Array("content".utf8))
            let expected = try #require(try pair.source.metadata(of: path("file")))
            let copy = try pair.destination.prepareCopy(of: path("file"), from: pair.source, expected: expected,
                                                        durable: false) { _ in }
            #expect(throws: Errno.noSuchFile.at("rename", "missing/file")) {
                try pair.destination.install(copy, at: path("missing/file"), replacing: nil, displacedTo: nil,
                                             durable: false)
            }
            #expect(try pair.temporaryFiles().isEmpty)

            let discarded = try pair.destination.prepareCopy(of: path("file"), from: pair.source, expected: expected,
                                                             durable: false) { _ in }
            pair.destination.discard(discarded)
            pair.destination.discard(discarded)  // Twice is harmless.
            #expect(try pair.temporaryFiles().isEmpty)
        }
    }

    /// DESIGN §3: a file a program has open for writing is never replaced (its later writes
    /// would go to a file without a name), on both paths; once closed it is.
    @Test func aCopyToAContentCheckedDestinationCarriesTheSourcesHash() throws {
        try Pair.with { pair in
            pair.destination.adopt(WriteProtocol(replace: .moveAside, create: .exclusiveOpen, verifiesContent: true))
            try pair.scratch.write("src/dense", randomBytes(300_000, seed: 7))
            let file = try FileDescriptor.open("src/sparse", [.writeOnly, .create], relativeTo: pair.scratch.directory)
            try file.closeAfter {
                try Sys.ftruncate(file.rawValue, 16 << 20)
                try randomBytes(4096, seed: 8).withUnsafeBytes { try file.writeAll(toAbsoluteOffset: 8 << 20, $0) }
            }
            try pair.scratch.untilClosedElsewhere("src/sparse")
            for name in ["dense", "sparse"] {
                let expected = try #require(try pair.source.metadata(of: path(name)))
                let copy = try pair.destination.prepareCopy(of: path(name), from: pair.source, expected: expected,
                                                            durable: false) { _ in }
                #expect(copy.contentHash != nil, "\(name)")
                #expect(copy.contentHash == (try pair.source.contentHash(of: path(name))), "\(name)")
                #expect(copy.contentHash == (try pair.destination.contentHash(of: copy.temporary)), "\(name)")
                pair.destination.discard(copy)
            }
            // A local destination is not checked by content: no hash is read for it.
            pair.destination.adopt(.local)
            let expected = try #require(try pair.source.metadata(of: path("dense")))
            let copy = try pair.destination.prepareCopy(of: path("dense"), from: pair.source, expected: expected,
                                                        durable: false) { _ in }
            #expect(copy.contentHash == nil)
            pair.destination.discard(copy)
        }
    }

    @Test func aSparseFileIsCopiedSparse() throws {
        try Pair.with { pair in
            let size: Int64 = 64 << 20
            let ranges: [(Int64, [UInt8])] = [(0, randomBytes(5000, seed: 7)), (40 << 20, randomBytes(8192, seed: 8))]
            let file = try FileDescriptor.open("src/sparse", [.writeOnly, .create], relativeTo: pair.scratch.directory)
            try file.closeAfter {
                try Sys.ftruncate(file.rawValue, size)
                for (offset, bytes) in ranges { try bytes.withUnsafeBytes { try file.writeAll(toAbsoluteOffset: offset, $0) } }
            }
            try pair.scratch.untilClosedElsewhere("src/sparse")
            let installed = try pair.copy("sparse")
            #expect(installed.size == size)
            let copy = try FileDescriptor.open("dst/sparse", relativeTo: pair.scratch.directory)
            try copy.closeAfter {
                let blocks = Int64(try Sys.fstat(copy.rawValue).st_blocks) * 512
                #expect(blocks <= 1 << 20, "the copy takes \(blocks) bytes on disk for 13 KiB of data")
                for (offset, bytes) in ranges + [(20 << 20, [UInt8](repeating: 0, count: 4096)), (size - 10, [UInt8](repeating: 0, count: 10))] {
                    var read = [UInt8](repeating: 1, count: bytes.count)
                    let count = try read.withUnsafeMutableBytes { try copy.read(fromAbsoluteOffset: offset, into: $0) }
                    #expect(count == bytes.count && read == bytes, "at \(offset)")
                }
            }
            #expect(try pair.destination.contentHash(of: path("sparse")) == (try pair.source.contentHash(of: path("sparse"))))
        }
    }

    /// The fallback where leases cannot be taken: the descriptors in /proc and their access mode.
    @Test func openWritersAreFoundInProc() throws {
        try Scratch.with { scratch in
            try scratch.write("file", Array("x".utf8))
            let status = try scratch.directory.metadata(of: "file")
            let identity = FileIdentity(device: status.device, inode: status.inode)
            let reader = try FileDescriptor.open("file", relativeTo: scratch.directory)
            try reader.closeAfter {
                #expect(!ProcessSupport.isOpenForWriting(identity))
                let writer = try FileDescriptor.open("file", [.readWrite], relativeTo: scratch.directory)
                try writer.closeAfter { #expect(ProcessSupport.isOpenForWriting(identity)) }
                #expect(Polling.spin(timeout: .seconds(10), interval: .milliseconds(1)) { !ProcessSupport.isOpenForWriting(identity) })
            }
        }
    }
}
