import Foundation
import Glibc
import NimbusVocabulary
import Testing
@testable import NimbusSystem

/// `RealNamePlaceholderFile.undoInterruptedFill`: a not-downloaded file that a killed daemon
/// had partly filled becomes a whole placeholder again; anything else (an edit, a finished
/// fill, a cloud file that changed) is left exactly as it is. Needs a filesystem with holes
/// (`SEEK_DATA`): /var/tmp.
@Suite struct InterruptedFillTests {
    static let size = 3 << 20 | 5
    static let state = "user.nimbus.state"

    /// A scratch with `cloud` (the content) and `local`: a sparse file of the same size whose
    /// first `filled` bytes are `written` (the cloud's unless said otherwise), mtime moved.
    func withFiles(filled: Int, written: [UInt8]? = nil, state: String = "notDownloaded",
                   _ body: (Scratch, FileDescriptor, FileMetadata, FileMetadata) throws -> Void) throws {
        try Scratch.with(base: "/var/tmp") { scratch in
            var seed: UInt64 = 0x16_16_16  // xorshift: varied bytes, quickly
            let content = (0..<Self.size).map { _ in
                seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17
                return UInt8(truncatingIfNeeded: seed)
            }
            try scratch.write("cloud", content)
            let local = try FileDescriptor.open("local", [.readWrite, .create, .exclusive], permissions: 0o644,
                                                relativeTo: scratch.directory)
            try local.closeAfter {
                try local.resize(to: Int64(Self.size))
                try Array(state.utf8).withUnsafeBytes { try Sys.fsetxattr(local.rawValue, Self.state, $0) }
                try local.setModificationTime(1_700_000_000_000_000_000)
            }
            let recorded = try scratch.directory.metadata(of: "local")
            let bytes = written ?? Array(content[..<filled])
            let writer = try FileDescriptor.open("local", [.writeOnly], relativeTo: scratch.directory)
            try writer.closeAfter { try writer.writeAll(bytes) }
            let cloud = try FileDescriptor.open("cloud", relativeTo: scratch.directory)
            try cloud.closeAfter { try body(scratch, cloud, recorded, try cloud.metadata()) }
        }
    }

    func undo(_ scratch: Scratch, _ cloud: FileDescriptor, _ recorded: FileMetadata, _ expected: FileMetadata) throws -> FileMetadata? {
        try RealNamePlaceholderFile.undoInterruptedFill(beneath: scratch.directory, try RelativePath(validating: "local"),
                                                        recorded: recorded, cloud: cloud, expected: expected, stateAttribute: Self.state)
    }

    @Test(arguments: [1, 4096, 1 << 20, 2 << 20 | 3])
    func aPartFilledWithTheCloudsBytesIsPunchedOutAgain(filled: Int) throws {
        try withFiles(filled: filled) { (scratch: Scratch, cloud: FileDescriptor, recorded: FileMetadata, expected: FileMetadata) throws in
            let undone = try #require(try undo(scratch, cloud, recorded, expected))
            #expect(undone.size == recorded.size && undone.mtime == recorded.mtime && undone.inode == recorded.inode)
            let file = try FileDescriptor.open("local", [.pathOnly], relativeTo: scratch.directory)
            defer { try? file.close() }
            #expect(try file.allocatedBytes() == 0)
        }
    }

    @Test func anEditIsLeftAlone() throws {
        try withFiles(filled: 0, written: Array("an edit made while no daemon listened\n".utf8)) { (scratch: Scratch, cloud: FileDescriptor, recorded: FileMetadata, expected: FileMetadata) throws in
            let before = try scratch.directory.metadata(of: "local")
            #expect(try undo(scratch, cloud, recorded, expected) == nil)
            #expect(try scratch.directory.metadata(of: "local") == before)
            #expect(try scratch.read("local").prefix(38) == Array("an edit made while no daemon listened\n".utf8)[...])
        }
    }

    @Test func aFinishedFillOrAChangedCloudFileIsLeftAlone() throws {
        try withFiles(filled: Self.size, state: "downloaded") { (scratch: Scratch, cloud: FileDescriptor, recorded: FileMetadata, expected: FileMetadata) throws in
            #expect(try undo(scratch, cloud, recorded, expected) == nil, "a file marked downloaded")
        }
        try withFiles(filled: 4096) { (scratch: Scratch, cloud: FileDescriptor, recorded: FileMetadata, expected: FileMetadata) throws in
            var changed = expected
            changed.mtime += 1
            #expect(try undo(scratch, cloud, recorded, changed) == nil, "a cloud file that is not the journal's any more")
            let file = try FileDescriptor.open("local", [.pathOnly], relativeTo: scratch.directory)
            defer { try? file.close() }
            #expect(try file.allocatedBytes() > 0)
        }
    }
}
