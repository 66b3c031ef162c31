import Glibc
import NimbusTestSupport
import NimbusVocabulary
import Testing
@testable import NimbusSystem

/// `DiskFileSystem.changeMode`: a mode changed only while the entry is still the one read,
/// with the mode read, so that Nimbus never puts back (or lends from) a mode the user has
/// changed since it looked.
@Suite struct ChangeModeTests {
    private func withRoot(_ body: (Scratch, DiskFileSystem) throws -> Void) throws {
        try Scratch.with { scratch in
            try scratch.directory.makeDirectory("root")
            try body(scratch, DiskFileSystem(root: scratch.path.appending("root")))
        }
    }

    private func mode(_ fs: DiskFileSystem, _ name: String) throws -> UInt32? { try fs.metadata(of: path(name))?.mode }

    @Test func aFolderAndAFileStillAsReadAreChanged() throws {
        try withRoot { scratch, fs in
            try scratch.directory.makeDirectory("root/d", permissions: 0o755)
            try scratch.directory.setPermissions(of: "root/d", 0o555)
            try scratch.write("root/f", Array("f".utf8), mode: 0o444)
            for (name, from, to) in [("d", UInt32(0o555), UInt32(0o755)), ("f", 0o444, 0o644)] {
                let inode = try #require(try fs.metadata(of: path(name))).inode
                #expect(try fs.changeMode(path(name), inode: inode, from: from, to: to, durable: false), "\(name)")
                #expect(try mode(fs, name) == to, "\(name)")
            }
        }
    }

    /// The user's chmod between Nimbus's read and its change: theirs is kept.
    @Test func aModeChangedSinceItWasReadIsLeft() throws {
        try withRoot { scratch, fs in
            try scratch.directory.makeDirectory("root/d", permissions: 0o755)
            let read = try #require(try fs.metadata(of: path("d")))
            try scratch.directory.setPermissions(of: "root/d", 0o700)
            #expect(try !fs.changeMode(path("d"), inode: read.inode, from: read.mode, to: 0o555, durable: false))
            #expect(try mode(fs, "d") == 0o700)
        }
    }

    /// Another entry at the name (the folder moved away and another made), a symlink, nothing:
    /// left alone. The first folder stays, so the second cannot get its inode (removed, it was
    /// reused now and then by the next folder made on a busy disk, whatever was made between).
    @Test func anotherEntryAtTheNameIsLeft() throws {
        try withRoot { scratch, fs in
            try scratch.directory.makeDirectory("root/d", permissions: 0o755)
            let read = try #require(try fs.metadata(of: path("d")))
            try scratch.directory.rename("root/d", to: "root/moved-away", in: scratch.directory)
            try scratch.directory.makeDirectory("root/d", permissions: 0o755)
            #expect(try fs.metadata(of: path("d"))?.inode != read.inode, "another folder at the name")
            #expect(try !fs.changeMode(path("d"), inode: read.inode, from: 0o755, to: 0o555, durable: false))
            #expect(try mode(fs, "d") == 0o755)

            try scratch.directory.makeSymlink("root/link", target: Array("d".utf8))
            let link = try #require(try fs.metadata(of: path("link")))
            #expect(try !fs.changeMode(path("link"), inode: link.inode, from: link.mode, to: 0o700, durable: false))
            #expect(try mode(fs, "d") == 0o755, "the symlink is not followed")
            #expect(try !fs.changeMode(path("missing"), inode: 1, from: 0o755, to: 0o700, durable: false))
        }
    }

    /// Durable: the entry's own fsync, through the descriptor it was changed through; every
    /// call survives an interruption by a signal.
    @Test func aDurableChangeIsFsyncedAndInterruptionsAreMadeAgain() throws {
        try withRoot { scratch, fs in
            try scratch.directory.makeDirectory("root/d", permissions: 0o755)
            let read = try #require(try fs.metadata(of: path("d")))
            var flushed: [Int32] = []
            let faults = SyscallFaults(interruptEveryCall: true, afterSync: { flushed.append($0) })
            let changed = try faults.inject { try fs.changeMode(path("d"), inode: read.inode, from: 0o755, to: 0o555, durable: true) }
            #expect(changed && faults.interruptions > 0)
            #expect(flushed.count == 1, "one fsync")
            #expect(try mode(fs, "d") == 0o555)
        }
    }
}
