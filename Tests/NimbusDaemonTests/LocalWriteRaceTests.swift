import Foundation
import Glibc
import NimbusVocabulary
import Testing
import NimbusCore
import NimbusSystem
@testable import NimbusDaemon

/// A program saving a local file at the very moment the engine replaces or deletes it: the
/// save must survive (DESIGN §3: a file changed since the last sync is never overwritten or
/// deleted without its content kept). `SyscallFaults` runs the save inside the engine's own
/// rename or unlink, the worst moment, which a real program hits only by chance (the
/// three-device test on rclone lost a version so, about once in twenty runs under load).
@Suite struct LocalWriteRaceTests {
    /// Saves `text` at `local/name` as an editor does (create or truncate, write, close), with
    /// Glibc directly: no rename or unlink of its own through the seam, where the hooks run.
    static func save(_ pair: DiskPair, _ name: String, _ text: String) {
        let fd = open("\(pair.root)/local/\(name)", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        precondition(fd >= 0, "open local/\(name): errno \(errno)")
        let bytes = Array(text.utf8)
        precondition(bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, $0.count) } == bytes.count)
        close(fd)
    }

    static func read(_ pair: DiskPair, _ relative: String) -> String? {
        (try? String(contentsOfFile: "\(pair.root)/\(relative)", encoding: .utf8))
    }

    /// Every file's content below `relative`, the versions store included.
    static func contents(_ pair: DiskPair, below relative: String) -> [String] {
        let root = "\(pair.root)/\(relative)"
        let paths = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        return paths.compactMap { try? String(contentsOfFile: "\(root)/\($0)", encoding: .utf8) }
    }

    /// A pair whose local `notes.txt` ("v1") is synced.
    static func syncedPair() throws -> DiskPair {
        let pair = try DiskPair()
        pair.engine.start()
        try pair.plant("local/notes.txt", "v1\n")
        pair.engine.sync(nil)
        #expect(read(pair, "cloud/notes.txt") == "v1\n")
        return pair
    }

    /// A pass with `editor`'s program acting inside it, then a pass that sees what it did.
    static func syncTwice(_ pair: DiskPair, first editor: SyscallFaults) {
        pair.clock.advance(by: .seconds(1))
        editor.inject { pair.engine.sync(nil) }
        pair.clock.advance(by: .seconds(1))
        pair.engine.sync(nil)
    }

    /// Before, `install` reported the file's metadata read after the download was in place:
    /// a save landing in between became the base, was never uploaded, and the next download
    /// overwrote it.
    @Test func aSaveRightAfterADownloadIsInPlaceIsUploaded() throws {
        let pair = try Self.syncedPair()

        try pair.plant("cloud/notes.txt", "v1\nfrom another device\n")
        let edit = "v1\nsaved here the moment the download got its name\n"
        var saves = 0
        let editor = SyscallFaults(afterRename: { name in
            guard name == "notes.txt", saves == 0 else { return }
            saves += 1
            Self.save(pair, "notes.txt", edit)
        })
        Self.syncTwice(pair, first: editor)
        #expect(saves == 1, "the download never got its name through renameat2")
        #expect(Self.read(pair, "local/notes.txt") == edit)
        #expect(Self.read(pair, "cloud/notes.txt") == edit, "the save never reached the cloud")
        #expect(Self.contents(pair, below: "cloud").contains("v1\nfrom another device\n"), "the other device's version is kept")
    }

    /// Before, a local file was checked (unchanged, not open for writing) and then unlinked: a
    /// save landing in between went with it, although it was never uploaded. The engine now
    /// moves the file aside before the check, and keeps it for the mass-delete guard's window
    /// rather than unlinking it: the save lands right after that move.
    @Test func aSaveRightBeforeADeletionIsKept() throws {
        let pair = try Self.syncedPair()

        // Another device deletes it (its version is in the cloud's versions store).
        try FileManager.default.removeItem(atPath: "\(pair.root)/cloud/notes.txt")
        let edit = "v1\nsaved here the moment before the deletion\n"
        var saves = 0
        let save = { (name: SystemPath) in
            // The file itself, or wherever the engine has put it before removing it.
            guard name.bytes.reversed().starts(with: Array("notes.txt".utf8).reversed()), saves == 0 else { return }
            saves += 1
            Self.save(pair, "notes.txt", edit)
        }
        let editor = SyscallFaults(afterRename: { name in
            if TemporaryName.isTemporary(name.bytes) { save(name) }
        }, beforeUnlink: save)
        Self.syncTwice(pair, first: editor)
        #expect(saves == 1, "the engine never removed notes.txt")
        #expect(Self.read(pair, "local/notes.txt") == edit, "the save was deleted")
        #expect(Self.read(pair, "cloud/notes.txt") == edit, "the save never reached the cloud")
    }
}
