import CNimbus
import Foundation
import Glibc
import NimbusVocabulary
import Testing
@testable import NimbusSystem
import NimbusTestSupport

@Suite struct SyscallTests {
    @Test func writeReadSeekResizeAndSync() throws {
        try Scratch.with { scratch in
            let file = try FileDescriptor.open("data", [.readWrite, .create, .exclusive], permissions: 0o600,
                                               relativeTo: scratch.directory)
            try file.closeAfter {
                try file.writeAll(Array("hello, world".utf8))
                try Array("WORLD".utf8).withUnsafeBytes { try file.writeAll(toAbsoluteOffset: 7, $0) }
                try file.sync()
                try file.dataSync()
                try file.seek(to: 0)
                #expect(try file.readAll() == Array("hello, WORLD".utf8))

                var five = [UInt8](repeating: 0, count: 5)
                let count = try five.withUnsafeMutableBytes { try file.read(fromAbsoluteOffset: 7, into: $0) }
                #expect(count == 5 && five == Array("WORLD".utf8))

                try file.resize(to: 5)
                let metadata = try file.metadata()
                #expect(metadata.kind == .file && metadata.size == 5 && metadata.mode == 0o600)
                #expect(try file.seekToEnd() == 5)
            }
        }
    }

    /// Waits are `Duration?` down to the seam, which alone makes poll's milliseconds: nil waits
    /// for ever, a deadline under a millisecond away waits 1 ms rather than spinning on 0, and
    /// one already past only looks.
    @Test func pollTimeoutsAreMadeFromDurationsAtTheSeam() throws {
        #expect(Sys.pollTimeout(nil) == -1)
        #expect(Sys.pollTimeout(.microseconds(300)) == 1 && Sys.pollTimeout(.nanoseconds(1)) == 1)
        #expect(Sys.pollTimeout(.seconds(1) + .nanoseconds(1)) == 1001 && Sys.pollTimeout(.milliseconds(250)) == 250)
        #expect(Sys.pollTimeout(.zero) == 0 && Sys.pollTimeout(.seconds(-3)) == 0)
        #expect(Sys.pollTimeout(.seconds(Int64.max)) == .max)
        let (reader, writer) = try Sys.pipe()
        let readEnd = FileDescriptor(rawValue: reader), writeEnd = FileDescriptor(rawValue: writer)
        defer { try? readEnd.close(); try? writeEnd.close() }
        var polls = PollSet()
        polls.set(readEnd, .readable)
        #expect(try polls.wait(timeout: .zero).isEmpty, "nothing written: a zero timeout only looks")
        #expect(try polls.wait(timeout: .seconds(-1)).isEmpty, "a deadline already past only looks")
        try writeEnd.writeAll([1])
        // nil would wait for ever, were the byte not there: it is, so the wait ends at once.
        #expect(try polls.wait(timeout: nil).map(\.0) == [readEnd])
        #expect(try Sys.poll(reader, Int16(POLLIN), nil))
    }

    @Test func errorsMapToTheirErrno() throws {
        try Scratch.with { scratch in
            #expect(throws: Errno.noSuchFile) {
                try FileDescriptor.open("missing", relativeTo: scratch.directory)
            }
            try scratch.write("present", [])
            #expect(throws: Errno.fileExists) {
                try FileDescriptor.open("present", [.writeOnly, .create, .exclusive], relativeTo: scratch.directory)
            }
            try scratch.directory.makeDirectory("full")
            try scratch.write("full/inside", [])
            #expect(throws: Errno.directoryNotEmpty) { try scratch.directory.removeDirectory("full") }
            #expect(throws: Errno.fileExists) {
                try Sys.linkat(scratch.directory.rawValue, "present", scratch.directory.rawValue, "full/inside")
            }
        }
    }

    @Test func descriptorsAreCloseOnExec() throws {
        try Scratch.with { scratch in
            let plain = try FileDescriptor.open("file", [.writeOnly, .create], relativeTo: scratch.directory)
            let beneath = try FileDescriptor.open(beneath: scratch.directory, try RelativePath(validating: "file"))
            defer { try? plain.close(); try? beneath.close() }
            #expect(try Sys.descriptorFlags(plain.rawValue) & FD_CLOEXEC != 0)
            #expect(try Sys.descriptorFlags(beneath.rawValue) & FD_CLOEXEC != 0)
        }
    }

    @Test func openBeneathRefusesEscapesAndSymlinks() throws {
        try Scratch.with { scratch in
            try scratch.directory.makeDirectory("inside")
            try scratch.write("inside/file", Array("x".utf8))
            try scratch.directory.makeSymlink("link", target: Array("/etc".utf8))
            try scratch.directory.makeSymlink("inner", target: Array("inside".utf8))
            try scratch.directory.makeSymlink("final", target: Array("inside/file".utf8))

            // ".." cannot even be spelled as a RelativePath; the kernel refuses it as well.
            #expect(throws: RelativePath.Invalid.parentReference) { try RelativePath(validating: "../etc/passwd") }
            #expect(throws: Errno.crossDevice) {
                try Sys.openBeneath(scratch.directory.rawValue, "inside/../../etc/passwd", O_RDONLY, 0)
            }
            #expect(throws: Errno.crossDevice) {
                try Sys.openBeneath(scratch.directory.rawValue, "/etc/passwd", O_RDONLY, 0)
            }
            for path in ["link/passwd", "inner/file", "final"] {
                #expect(throws: Errno.tooManySymlinks, "\(path)") {
                    try FileDescriptor.open(beneath: scratch.directory, try RelativePath(validating: path))
                }
            }
            let file = try FileDescriptor.open(beneath: scratch.directory, try RelativePath(validating: "inside/file"))
            let contents = try file.closeAfter { try file.readAll() }
            #expect(contents == Array("x".utf8))
        }
    }

    @Test func readsDirectoryNamesAndLinkTargets() throws {
        try Scratch.with { scratch in
            try scratch.write(SystemPath(bytes: [0x66, 0xFF, 0xFE]), [])
            try scratch.directory.makeSymlink("link", target: [0x74, 0xFF])
            let fd = try FileDescriptor.open(".", [.directory], relativeTo: scratch.directory)
            let stream = try Sys.openDirectoryStream(fd.rawValue)
            defer { try? Sys.closeDirectoryStream(stream) }
            var names: Set<[UInt8]> = []
            while let name = try Sys.nextDirectoryEntryName(stream) {
                names.insert(Array(UnsafeRawBufferPointer(start: name, count: strlen(name))))
            }
            #expect(names == [Array(".".utf8), Array("..".utf8), [0x66, 0xFF, 0xFE], Array("link".utf8)])

            var target = [UInt8](repeating: 0, count: 16)
            let count = try target.withUnsafeMutableBytes {
                try Sys.readlinkat(scratch.directory.rawValue, "link", into: $0)
            }
            #expect(Array(target[..<count]) == [0x74, 0xFF])
        }
    }
}

// MARK: - Shared by the NimbusSystem tests

/// A fresh directory under /tmp for one test, removed with everything in it afterwards.
struct Scratch {
    let path: SystemPath
    let directory: FileDescriptor

    static func with<R>(base: String = "/tmp", _ body: (Scratch) throws -> R) throws -> R {
        var template = Array("\(base)/nimbus-test-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw Errno.current }
        let path = SystemPath(bytes: template.dropLast().map { UInt8(bitPattern: $0) })
        defer { removeTree(path) }
        let directory = try FileDescriptor.open(path, [.directory])
        defer { try? directory.close() }
        return try body(Scratch(path: path, directory: directory))
    }

    /// Writes `name` and returns once no other process has it open (`untilClosedElsewhere`).
    func write(_ name: SystemPath, _ contents: [UInt8], mode: UInt32 = 0o644) throws {
        let file = try FileDescriptor.open(name, [.writeOnly, .create, .truncate], permissions: mode,
                                           relativeTo: directory)
        try file.closeAfter {
            try file.writeAll(contents)
            try file.setPermissions(mode)
        }
        try untilClosedElsewhere(name)
    }

    /// Returns once no other process has `name` open: the tests hand what they write to the
    /// copier and the installer, which rightly refuse a file still open for writing, as one
    /// that a child forked by another test meanwhile holds until it execs
    /// (`Polling.untilClosedElsewhere`).
    func untilClosedElsewhere(_ name: SystemPath) throws {
        try Polling.untilClosedElsewhere("\(name)") { directory.isOpenElsewhere(name) }
    }

    func read(_ name: SystemPath) throws -> [UInt8] {
        let file = try FileDescriptor.open(name, [.noFollow], relativeTo: directory)
        return try file.closeAfter { try file.readAll() }
    }

    func exists(_ name: SystemPath) -> Bool { (try? directory.metadata(of: name)) != nil }

    /// Names in `directory` (relative to the scratch directory), "." and ".." left out.
    func names(in name: SystemPath) throws -> Set<[UInt8]> {
        let fd = try FileDescriptor.open(name, [.directory], relativeTo: directory)
        let stream = try Sys.openDirectoryStream(fd.rawValue)
        defer { try? Sys.closeDirectoryStream(stream) }
        var names: Set<[UInt8]> = []
        while let entry = try Sys.nextDirectoryEntryName(stream) {
            names.insert(Array(UnsafeRawBufferPointer(start: entry, count: strlen(entry))))
        }
        return names.subtracting([Array(".".utf8), Array("..".utf8)])
    }
}

/// rm -rf of a test directory (as root it also empties the chmod 000 ones).
func removeTree(_ path: SystemPath) {
    _ = try? ShellCommand.run("/bin/rm", ["-rf", path.description])
}

func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var random = SeededRandom(seed: seed)
    return random.bytes(count)
}

func path(_ string: String) throws -> RelativePath { try RelativePath(validating: string) }
