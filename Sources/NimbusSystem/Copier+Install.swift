import Glibc

/// The second half of an atomic copy (DESIGN §3): puts a prepared temporary file at its
/// destination without ever overwriting a file the plan did not expect.
///
/// - A create uses `RENAME_NOREPLACE`: a file that appeared meanwhile is never replaced.
/// - A replace swaps the two files with `RENAME_EXCHANGE`, then checks the file it took out:
///   the check and the swap cannot be separated by someone else's write, because the file
///   checked is the one that was swapped out. A wrong one is swapped back.
/// - Where the filesystem cannot exchange (NFS, SMB, most FUSE), the old file is checked,
///   moved away, and the new one renamed in with `RENAME_NOREPLACE`, leaving a short window.
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
    /// False only in tests, to walk the path taken on filesystems without `RENAME_EXCHANGE`.
    var exchangeSupported = true

    func install(_ copy: PreparedCopy, at destination: RelativePath, replacing: FileMetadata?,
                 displacedTo: RelativePath?, durable: Bool) throws -> FileMetadata {
        do {
            try root.withParent(of: copy.temporary) { temporaryDirectory, temporaryName in
                try root.withParent(of: destination) { destinationDirectory, destinationName in
                    let move = Move(installer: self, temporary: (temporaryDirectory, temporaryName),
                                    destination: (destinationDirectory, destinationName),
                                    temporaryPath: copy.temporary, destinationPath: destination)
                    if let replacing {
                        try move.replace(replacing, displacedTo: displacedTo)
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
        return try attributing("lstat", destination.shown) {
            try root.withParent(of: destination) { directory, name in try directory.metadata(of: name) }
        }
    }

    /// Removes a prepared copy; it may be gone already.
    func discard(_ copy: PreparedCopy) {
        try? root.withParent(of: copy.temporary) { directory, name in try directory.removeFile(name) }
    }

    /// Moves the entry `name` of `directory` to `target` (creating its parent directories); a
    /// name taken there gets " (2)", " (3)"… appended rather than being replaced.
    func displace(_ name: SystemPath, in directory: FileDescriptor, to target: RelativePath) throws {
        try attributing("mkdir", target.parent.shown) { try root.makeDirectories(target.parent) }
        try attributing("rename", target.shown) {
            try root.withParent(of: target) { targetDirectory, targetName in
                var candidate = targetName
                var number = 1
                while true {
                    do {
                        return try directory.renameNoReplace(name, to: candidate, in: targetDirectory)
                    } catch let error as Errno where error == .fileExists {
                        number += 1
                        candidate = SystemPath(bytes: targetName.bytes + Array(" (\(number))".utf8))
                    }
                }
            }
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
            try temporary.directory.renameNoReplace(temporary.name, to: destination.name, in: destination.directory)
        } catch let error as Errno where error == .fileExists {
            throw CopyError.destinationChanged(destinationPath)
        }
    }

    func replace(_ expected: FileMetadata, displacedTo: RelativePath?) throws {
        if installer.exchangeSupported, try exchange() {
            // The old file now has the temporary name.
            do {
                // Asked before the metadata check: a writer that closes in between has written
                // what it wrote, which the check sees.
                if installer.refusesOpenWriters && temporary.directory.isOpenForWriting(temporary.name) {
                    throw CopyError.destinationInUse(destinationPath)
                }
                let old = try temporary.directory.metadata(of: temporary.name)
                guard old.isSame(as: expected) else { throw CopyError.destinationChanged(destinationPath) }
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
        guard current.isSame(as: expected) else { throw CopyError.destinationChanged(destinationPath) }
        if installer.refusesOpenWriters && destination.directory.isOpenForWriting(destination.name) {
            throw CopyError.destinationInUse(destinationPath)
        }
        // Out of the way first, so the new file goes in with NOREPLACE and a file someone creates
        // in between is never overwritten.
        if let displacedTo {
            try installer.displace(destination.name, in: destination.directory, to: displacedTo)
            try create()  // If someone took the name meanwhile, the old file is safe in the store.
            return
        }
        let aside = SystemPath(bytes: TemporaryFile.randomName())
        try destination.directory.renameNoReplace(destination.name, to: aside, in: destination.directory)
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
