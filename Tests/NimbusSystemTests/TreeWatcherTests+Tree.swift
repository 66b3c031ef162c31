import Dispatch
import Glibc
import NimbusVocabulary
import Synchronization
import Testing
@testable import NimbusSystem
import NimbusTestSupport

// The tree as inotify shows it: files and directories made, changed, renamed, moved in and out,
// odd names, and what is left out. (This file sorts before TreeWatcherTests.swift, so these
// tests keep their place before the others in the serialized suite's order.)
extension TreeWatcherTests {
    @Test func reportsTheLifeOfAFile() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        let watcher = try TreeWatcher(root: scratch.root)
        defer { watcher.close() }

        try scratch.write("f", "hello")
        let written = try watcher.collect { $0.has(.closedWrite, "f") }
        #expect(written.has(.created, "f", directory: false))
        #expect(written.has(.modified, "f", directory: false))

        try scratch.cwd.setPermissions(of: scratch.path("f"), 0o600)
        try watcher.collect { $0.has(.attributesChanged, "f", directory: false) }

        try scratch.cwd.removeFile(scratch.path("f"))
        try watcher.collect { $0.has(.deleted, "f", directory: false) }
    }

    @Test func watchesNewDirectoriesAndForgetsRemovedOnes() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        let watcher = try TreeWatcher(root: scratch.root)
        defer { watcher.close() }

        try scratch.makeDirectories("d")
        try watcher.collect { $0.has(.created, "d", directory: true) }
        try scratch.write("d/f")
        try watcher.collect { $0.has(.closedWrite, "d/f") }
        #expect(watcher.watchedDirectoryCount == 2)

        try scratch.cwd.removeFile(scratch.path("d/f"))
        try scratch.cwd.removeDirectory(scratch.path("d"))
        let events = try watcher.collect(sentinel: scratch)
        #expect(events.has(.deleted, "d/f", directory: false))
        #expect(events.has(.deleted, "d", directory: true))
        #expect(watcher.watchedDirectoryCount == 1)
    }

    /// `mkdir -p a/b/c` followed at once by files inside: the files are made before the
    /// watcher has even seen `a`, so they must come from the listing of the new directories.
    @Test func reportsFilesMadeInNewDirectoriesBeforeTheyWereWatched() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        let watcher = try TreeWatcher(root: scratch.root)
        defer { watcher.close() }

        var expected: [String] = []
        for tree in 0..<10 {
            try scratch.makeDirectories("t\(tree)/a/b/c")
            for file in ["t\(tree)/a/f1", "t\(tree)/a/b/f2", "t\(tree)/a/b/c/f3"] {
                try scratch.write(file)
                expected.append(file)
            }
        }
        let events = try watcher.collect { events in
            expected.allSatisfy { events.has(.created, $0, directory: false) }
        }
        #expect(events.has(.created, "t9/a/b/c", directory: true))

        try scratch.write("t0/a/b/c/f3", "again")
        try scratch.write("t9/a/b/c/new")
        try watcher.collect { $0.has(.closedWrite, "t0/a/b/c/f3") && $0.has(.created, "t9/a/b/c/new") }
    }

    @Test func pairsRenamesInsideTheTreeAndFollowsRenamedDirectories() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        try scratch.makeDirectories("d/inner")
        try scratch.write("d/inner/f")
        try scratch.write("x")
        let watcher = try TreeWatcher(root: scratch.root)
        defer { watcher.close() }

        try scratch.cwd.rename(scratch.path("x"), to: scratch.path("y"))
        try scratch.cwd.rename(scratch.path("d"), to: scratch.path("e"))
        let events = try watcher.collect { $0.cookie(of: "e") != nil && $0.cookie(of: "y") != nil }
        #expect(events.cookie(of: "x") == events.cookie(of: "y"))
        let paired = events.pairingMoves()
        #expect(paired.has(.moved(from: treePath("x")), "y", directory: false))
        #expect(paired.has(.moved(from: treePath("d")), "e", directory: true))
        #expect(!paired.contains { if case .movedFrom = $0.kind { true } else { false } })

        try scratch.write("e/inner/g")
        let later = try watcher.collect { $0.has(.created, "e/inner/g", directory: false) }
        #expect(!later.contains { treePath("d").contains($0.path) })
        #expect(watcher.watchedDirectoryCount == 3)
    }

    @Test func aDirectoryMovedOutIsReportedOnceAndNoLongerWatched() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        try scratch.makeDirectories("tree/d/sub")
        try scratch.makeDirectories("outside")
        let watcher = try TreeWatcher(root: scratch.path("tree"))
        defer { watcher.close() }

        try scratch.cwd.rename(scratch.path("tree/d"), to: scratch.path("outside/d"))
        let events = try watcher.collect { $0.cookie(of: "d") != nil }.pairingMoves()
        #expect(events.has(.movedFrom(cookie: events.cookie(of: "d")!), "d", directory: true))

        try scratch.write("outside/d/sub/later")
        let after = try watcher.collect(sentinel: scratch, in: "tree")
        #expect(!after.contains { treePath("d").contains($0.path) })
        #expect(watcher.watchedDirectoryCount == 1)
    }

    @Test func aDirectoryMovedInIsReportedWithItsContentsAndWatched() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        try scratch.makeDirectories("tree")
        try scratch.makeDirectories("outside/n/sub")
        try scratch.write("outside/n/sub/f")
        let watcher = try TreeWatcher(root: scratch.path("tree"))
        defer { watcher.close() }

        try scratch.cwd.rename(scratch.path("outside/n"), to: scratch.path("tree/n"))
        let events = try watcher.collect { $0.has(.created, "n/sub/f", directory: false) }.pairingMoves()
        #expect(events.has(.movedTo(cookie: events.cookie(of: "n")!), "n", directory: true))
        #expect(events.has(.created, "n/sub", directory: true))

        try scratch.write("tree/n/sub/g")
        try watcher.collect { $0.has(.created, "n/sub/g", directory: false) }
    }

    @Test func namesThatAreNotUTF8ArriveWithTheirExactBytes() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        let watcher = try TreeWatcher(root: scratch.root)
        defer { watcher.close() }

        let file: [UInt8] = [0x66, 0xFF, 0xFE]
        let directory: [UInt8] = [0x64, 0xC3, 0x28]
        let inner: [UInt8] = [0xE9]
        try scratch.write(SystemPath(bytes: file))
        try scratch.cwd.makeDirectory(scratch.root.appending(SystemPath(bytes: directory)))
        try scratch.write(SystemPath(bytes: directory + [UInt8(ascii: "/")] + inner))

        let innerPath = try RelativePath(validating: directory + [UInt8(ascii: "/")] + inner)
        let events = try watcher.collect { $0.contains { $0.kind == .created && $0.path == innerPath } }
        #expect(events.contains { $0.kind == .created && $0.path.bytes == file && !$0.isDirectory })
        #expect(events.contains { $0.kind == .created && $0.path.bytes == directory && $0.isDirectory })
    }

    /// A folder whose path is longer than PATH_MAX cannot be opened by name, so it cannot be
    /// watched; the rest of the tree still is. Seen with the real daemon: one such folder in
    /// the local folder (2 500 levels of dd/) and nimbusd watched none of the folder ("cannot
    /// watch the local folder …: File name too long"), scanning it every 30 s instead.
    @Test func aFolderTooDeepToNameIsLeftOutAndTheRestIsWatched() throws {
        let scratch = try WatchScratch()
        // Two chains of 1 200 levels each, one moved to the end of the other: 7 200 bytes of
        // path. Each chain's own path stays under PATH_MAX, so both can be made and removed.
        let level = String(repeating: "dd/", count: 1_200)
        try scratch.makeDirectories("deep/" + level)
        try scratch.makeDirectories("deeper/" + level)
        let bottom = "deep/" + level + "deeper"
        try scratch.cwd.rename(scratch.path("deeper"), to: scratch.path(bottom))
        defer {
            try? scratch.cwd.rename(scratch.path(bottom), to: scratch.path("deeper"))
            scratch.remove()
        }
        let watcher = try TreeWatcher(root: scratch.root)
        defer { watcher.close() }

        try scratch.write("top.txt")
        try scratch.write("deep/dd/inside.txt")
        let events = try watcher.collect(sentinel: scratch)
        #expect(events.has(.created, "top.txt", directory: false))
        #expect(events.has(.created, "deep/dd/inside.txt", directory: false))
    }

    @Test func excludedDirectoriesAreNeitherWatchedNorReported() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        try scratch.makeDirectories(".nimbus/versions")
        let options = TreeWatcher.Options(exclude: { $0.name == Array(".nimbus".utf8) })
        let watcher = try TreeWatcher(root: scratch.root, options: options)
        defer { watcher.close() }

        try scratch.write(".nimbus/x")
        try scratch.write(".nimbus/versions/y")
        try scratch.makeDirectories("a/.nimbus")
        try scratch.write("a/.nimbus/z")
        try scratch.write("a/kept")
        let events = try watcher.collect(sentinel: scratch)
        #expect(events.has(.created, "a/kept", directory: false))
        #expect(!events.contains { $0.path.components.contains(Array(".nimbus".utf8)) })
        #expect(watcher.watchedDirectoryCount == 2)
    }

    @Test func temporaryFilesOfNimbusAreNotReported() throws {
        let scratch = try WatchScratch()
        defer { scratch.remove() }
        let watcher = try TreeWatcher(root: scratch.root)
        defer { watcher.close() }

        try scratch.write(".nimbus-tmp-1234")
        try scratch.cwd.rename(scratch.path(".nimbus-tmp-1234"), to: scratch.path("final"))
        let events = try watcher.collect { $0.cookie(of: "final") != nil }.pairingMoves()
        #expect(!events.contains { TemporaryName.isTemporary($0.path.name) })
        #expect(events.has(.movedTo(cookie: events.cookie(of: "final")!), "final", directory: false))
    }
}
