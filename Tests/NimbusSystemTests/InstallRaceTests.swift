import Glibc
import NimbusVocabulary
import Testing
@testable import NimbusSystem

/// A program that writes to a file the moment a copy is put in place (an editor saving, a
/// test appending) must not have its write taken for part of the copy: the metadata `install`
/// returns becomes the base, and a write absorbed into it is never uploaded and is overwritten
/// by the next download. Seen as a lost version in the three-device test.
@Suite struct InstallRaceTests {
    /// Writes `text` over `name` of the scratch directory, as an editor saving in place does
    /// (Glibc directly: no rename or unlink through the seam, where the hook runs).
    static func save(_ scratch: Scratch, _ name: String, _ text: String) {
        let fd = openat(scratch.directory.rawValue, name, O_WRONLY | O_TRUNC | O_CLOEXEC)
        precondition(fd >= 0, "open \(name): errno \(errno)")
        let bytes = Array(text.utf8)
        precondition(bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, $0.count) } == bytes.count)
        close(fd)
    }

    @Test(arguments: [false, true])
    func aWriteRightAfterTheRenameIsNotReportedAsInstalled(replacing: Bool) throws {
        try Pair.with(temporaryDirectory: nil) { pair in
            let copied = "the version being downloaded\n"
            try pair.scratch.write("src/file", Array(copied.utf8))
            if replacing { try pair.scratch.write("dst/file", Array("the synced version\n".utf8)) }
            let old = try pair.destination.metadata(of: path("file"))

            var saves = 0
            let editor = SyscallFaults(afterRename: { name in
                guard name == "file", saves == 0 else { return }
                saves += 1
                Self.save(pair.scratch, "dst/file", "saved by a program the moment the copy got its name\n")
            })
            let installed = try editor.inject { try pair.copy("file", replacing: old) }

            #expect(saves == 1, "the copy never got its name through renameat2")
            let now = try #require(try pair.destination.metadata(of: path("file")))
            #expect(installed.size == Int64(copied.utf8.count), "install reported \(installed), the file after the program's write")
            #expect(installed.size != now.size || installed.mtime != now.mtime,
                    "the program's write looks like the installed copy: the next scan would not see it")
        }
    }
}
