import Glibc
import NimbusVocabulary

/// The second half of an atomic copy (DESIGN §3): puts a prepared temporary file at its
/// destination without ever overwriting a file the plan did not expect. How depends on the
/// filesystem's `WriteProtocol`:
///
/// - A create never replaces a file that appeared meanwhile: `RENAME_NOREPLACE`, or where a
///   network filesystem refuses it, `link(2)` (exclusive on the server), or a name claimed with
///   `O_EXCL`.
/// - `exchange`: the two files are swapped with `RENAME_EXCHANGE`, then the file taken out is
///   checked: the check and the swap cannot be separated by someone else's write, because the
///   file checked is the one that was swapped out. A wrong one is swapped back.
/// - `moveAside` (NFS, SMB, FUSE): the old file is moved out of the way (into the versions
///   store, or to a temporary name), then what was moved is checked: its attributes read after
///   the rename (which a client cannot answer from a stale cache) and, with `expectedHash`, its
///   content. A wrong one is put back exclusively and nothing is installed; another device that
///   replaced the file meanwhile can thus never be overwritten silently.
///
/// With `refusesOpenWriters`, a file some program has open for writing is not replaced
/// (`CopyError.destinationInUse`): the program's later writes would go to a file without a
/// name. With the exchange the check is made on the file swapped out, so a writer that opened
/// it before the swap is always seen (and the swap undone); one opening it after gets the new file.
///
/// Whatever fails, the temporary file is removed, except in the one case where it holds
/// someone else's file (a swap back that failed): then it is kept and the error says so.
struct Installer {
    let root: FileDescriptor
    /// The local root: a file open for writing there is not replaced.
    var refusesOpenWriters = false
    /// How the destination's filesystem is written (see above).
    var writeProtocol: WriteProtocol = .local

    init(root: FileDescriptor, refusesOpenWriters: Bool = false, writeProtocol: WriteProtocol = .local) {
        self.root = root
        self.refusesOpenWriters = refusesOpenWriters
        self.writeProtocol = writeProtocol
    }

    /// `exchangeSupported: false` walks the path taken on filesystems without `RENAME_EXCHANGE` (tests).
    init(root: FileDescriptor, refusesOpenWriters: Bool = false, exchangeSupported: Bool) {
        self.init(root: root, refusesOpenWriters: refusesOpenWriters, writeProtocol: exchangeSupported ? .local
                    : WriteProtocol(replace: .moveAside, create: .renameNoReplace, verifiesContent: false))
    }

    func install(_ copy: PreparedCopy, at destination: RelativePath, replacing: FileMetadata?,
                 expectedHash: ContentHash? = nil, displacedTo: RelativePath?, durable: Bool) throws -> FileMetadata {
        // A folder replaced by the file is moved or removed: kept descriptors may name it.
        defer { if replacing?.kind == .directory { DirectoryCache.forget() } }
        var placed: FileMetadata?
        do {
            try root.withParent(of: copy.temporary) { temporaryDirectory, temporaryName in
                // What is installed, read while no one else can reach it: once it has its name, a
                // program may open it and write at once, and a later lstat would report that
                // write as part of the copy (the base would absorb it: never uploaded, and
                // overwritten by the next download). Where a rename keeps a file's attributes
                // (not on a network filesystem, whose client may show new ones), this is also
                // what the file has once in place.
                if !writeProtocol.verifiesContent {
                    placed = try copy.written
                        ?? attributing("lstat", copy.temporary.shown) { try temporaryDirectory.metadata(of: temporaryName) }
                }
                try root.withParent(of: destination) { destinationDirectory, destinationName in
                    let move = Move(installer: self, temporary: (temporaryDirectory, temporaryName),
                                    destination: (destinationDirectory, destinationName),
                                    temporaryPath: copy.temporary, destinationPath: destination)
                    if let replacing {
                        try move.replace(replacing, hash: expectedHash, displacedTo: displacedTo)
                    } else {
                        try move.create()
                    }
                }
            }
        } catch let kept as TemporaryKept {
            throw kept.error
        } catch let error as Errno {
            discard(copy)
            throw error.at("rename", destination.shown)
        } catch {
            discard(copy)
            throw error
        }
        if durable {
            try attributing("fsync", destination.parent.shown) { try root.syncDirectory(destination.parent) }
            if let displacedTo {
                try attributing("fsync", displacedTo.parent.shown) { try root.syncDirectory(displacedTo.parent) }
            }
        }
        if let placed { return placed }
        return try attributing("lstat", destination.shown) {
            try root.withParent(of: destination) { directory, name in try directory.metadata(of: name) }
        }
    }

    /// Removes a prepared copy; it may be gone already.
    func discard(_ copy: PreparedCopy) {
        try? root.withParent(of: copy.temporary) { directory, name in try directory.removeFile(name) }
    }

    /// Moves the entry `name` of `directory` to `target` (creating its parent directories); a
    /// name taken there gets " (2)", " (3)"… before its extension rather than being replaced
    /// (`t-dev (2).nimbus-version`, so the versions store still knows it by its suffix).
    /// Returns where it went.
    @discardableResult
    func displace(_ name: SystemPath, in directory: FileDescriptor, to target: RelativePath) throws -> RelativePath {
        try attributing("mkdir", target.parent.shown) { try root.makeDirectories(target.parent) }
        return try attributing("rename", target.shown) {
            try root.withParent(of: target) { targetDirectory, targetName in
                var candidate = targetName
                var number = 1
                while true {
                    do {
                        try directory.renameToPrivateName(name, to: candidate, in: targetDirectory)
                        return try target.parent.appending(name: candidate.bytes)
                    } catch let error as Errno where error == .fileExists {
                        number += 1
                        candidate = Self.numbered(targetName, number)
                    }
                }
            }
        }
    }

    /// `name (number).ext`: the counter before the last extension; a leading dot (`.profile`)
    /// starts no extension. Shortened to fit NAME_MAX as `FileName.inserting` says.
    static func numbered(_ name: SystemPath, _ number: Int) -> SystemPath {
        SystemPath(bytes: FileName.inserting(Array(" (\(number))".utf8), into: name.bytes))
    }

    /// Puts the temporary file at a name nobody holds, in the way `writeProtocol` says.
    func createExclusively(_ from: SystemPath, in fromDirectory: FileDescriptor, to: SystemPath,
                           in toDirectory: FileDescriptor) throws {
        switch writeProtocol.create {
        case .renameNoReplace, .hardLink:
            try fromDirectory.renameNoReplace(from, to: to, in: toDirectory)
        case .exclusiveOpen:
            try fromDirectory.claimAndRename(from, to: to, in: toDirectory)
        }
    }
}

/// Thrown when the temporary file holds the destination's old content and must be kept.
private struct TemporaryKept: Error {
    let error: any Error
}

/// One installation: the two names involved, opened once.
private struct Move {
    let installer: Installer
    let temporary: (directory: FileDescriptor, name: SystemPath)
    let destination: (directory: FileDescriptor, name: SystemPath)
    let temporaryPath: RelativePath
    let destinationPath: RelativePath

    func create() throws {
        do {
            try installer.createExclusively(temporary.name, in: temporary.directory, to: destination.name,
                                            in: destination.directory)
        } catch let error as Errno where error == .fileExists {
            throw CopyError.destinationChanged(destinationPath)
        }
    }

    func replace(_ expected: FileMetadata, hash: ContentHash?, displacedTo: RelativePath?) throws {
        if installer.writeProtocol.replace == .exchange, try exchange() {
            // The old file now has the temporary name.
            do {
                // Asked before the metadata check: a writer that closes in between has written
                // what it wrote, which the check sees.
                if installer.refusesOpenWriters && temporary.directory.isOpenForWriting(temporary.name) {
                    throw CopyError.destinationInUse(destinationPath)
                }
                let old = try temporary.directory.metadata(of: temporary.name)
                guard old.isSame(as: expected) else { throw CopyError.destinationChanged(destinationPath) }
                if let hash, old.kind == .file,
                   try installer.root.contentHash(of: temporaryPath) != hash {
                    throw CopyError.notTheSyncedVersion(destinationPath, keptAt: nil)  // Swapped back below.
                }
                try dispose(old, at: temporary, displacedTo: displacedTo)
            } catch {
                // Swap back. Failing that (the destination vanished or the disk failed in the last
                // milliseconds), the temporary file holds the old content: keep it and say where.
                guard (try? exchange()) == true else {
                    let kept = "\(temporaryPath.shown) (holds the previous \(destinationPath.shown))"
                    throw TemporaryKept(error: Errno.ioError.at("swap back", kept))
                }
                throw error
            }
            return
        }
        let current: FileMetadata
        do {
            current = try destination.directory.metadata(of: destination.name)
        } catch let error as Errno where error == .noSuchFile {
            throw CopyError.destinationChanged(destinationPath)
        }
        // What a client's cache says: a quick refusal, never the proof (see `verifyMoved`).
        guard current.isSame(as: expected) else { throw CopyError.destinationChanged(destinationPath) }
        if installer.refusesOpenWriters && destination.directory.isOpenForWriting(destination.name) {
            throw CopyError.destinationInUse(destinationPath)
        }
        // Out of the way first, so the new file goes in exclusively and a file someone creates
        // in between is never overwritten.
        let asidePath: RelativePath
        if let displacedTo {
            asidePath = try installer.displace(destination.name, in: destination.directory, to: displacedTo)
        } else {
            let aside = SystemPath(bytes: TemporaryFile.randomName())
            do {
                try destination.directory.renameToPrivateName(destination.name, to: aside, in: destination.directory)
            } catch let error as Errno where error == .noSuchFile {
                throw CopyError.destinationChanged(destinationPath)
            }
            asidePath = try destinationPath.parent.appending(name: aside.bytes)
        }
        try installer.verifyMoved(asidePath, from: destinationPath, expected: expected, hash: hash)
        guard displacedTo == nil else {
            try create()  // If someone took the name meanwhile, the old file is safe in the store.
            return
        }
        let aside = SystemPath(bytes: asidePath.name)
        do {
            try create()
        } catch {
            // Best effort: put the old file back; if someone took the name meanwhile, the old file
            // keeps its temporary name until the next `removeTemporaryFiles`.
            try? destination.directory.renameNoReplace(aside, to: destination.name, in: destination.directory)
            throw error
        }
        try dispose(current, at: (destination.directory, aside), displacedTo: nil)
    }

    /// Swaps the temporary file and the destination; false when this filesystem cannot.
    private func exchange() throws -> Bool {
        do {
            try temporary.directory.rename(temporary.name, to: destination.name, in: destination.directory,
                                           mode: .exchange)
            return true
        } catch let error as Errno where error == .invalidArgument || error == .notSupported {
            return false
        } catch let error as Errno where error == .noSuchFile {
            // Either name may be missing; only a missing destination means someone else acted.
            if (try? destination.directory.metadata(of: destination.name)) == nil {
                throw CopyError.destinationChanged(destinationPath)
            }
            throw error
        }
    }

    /// Moves the replaced entry to the versions store, or removes it.
    private func dispose(_ old: FileMetadata, at place: (directory: FileDescriptor, name: SystemPath),
                         displacedTo: RelativePath?) throws {
        if let displacedTo {
            try installer.displace(place.name, in: place.directory, to: displacedTo)
        } else if old.kind == .directory {
            try place.directory.removeDirectory(place.name)
        } else {
            try place.directory.removeFile(place.name)
        }
    }
}

extension FileMetadata {
    /// Still the same entry, untouched: kind, size, mtime, mode and inode all as recorded.
    /// (A symlink's target is not compared: lstat does not read it, and changing a target means
    /// a new symlink, thus a new inode.)
    func isSame(as recorded: FileMetadata) -> Bool {
        kind == recorded.kind && size == recorded.size && mtime == recorded.mtime && mode == recorded.mode
            && inode == recorded.inode
    }
}
