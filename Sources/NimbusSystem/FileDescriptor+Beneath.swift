import Glibc
import NimbusVocabulary

// Operations on paths inside a root directory. Every path is resolved with openat2 beneath
// the root refusing all symlinks, then the final name is handled with an *at call on its
// directory, so no operation can leave the root or pass through a symlink; a symlink on the
// way surfaces as ELOOP, never followed.

extension FileDescriptor {
    /// Runs `body` with the directory holding `path` and `path`'s last component ("." for the
    /// root itself). The directory is opened `O_PATH`: enough for every *at call, it needs no
    /// read permission, and (since Linux 6.5) it wakes no `IN_OPEN` watcher. Inside
    /// `DirectoryCache.keepingDirectoriesOpen` it is opened once for the batch.
    func withParent<R>(of path: RelativePath, _ body: (FileDescriptor, SystemPath) throws -> R) throws -> R {
        if path.isRoot { return try body(self, ".") }
        let name = SystemPath(bytes: path.name)
        let parent = path.parent
        if parent.isRoot { return try body(self, name) }
        if let scope = DirectoryCache.current {
            return try scope.withDirectory(parent, beneath: self) { directory in try body(directory, name) }
        }
        let directory = try FileDescriptor.open(beneath: self, parent, [.pathOnly, .directory])
        return try directory.closeAfter { try body(directory, name) }
    }

    /// mkdir -p of `path` beneath this root (each new directory with `permissions`, less the
    /// umask); an existing symlink on the way is refused, never followed.
    func makeDirectories(_ path: RelativePath, permissions: UInt32 = 0o755) throws {
        var built = RelativePath.root
        for component in path.components {
            built = try built.appending(name: component)
            do {
                try withParent(of: built) { directory, name in
                    try directory.makeDirectory(name, permissions: permissions)
                }
            } catch let error as Errno where error == .fileExists {
                continue
            }
        }
        // Proves the whole chain is real directories (an existing symlink fails here).
        try FileDescriptor.open(beneath: self, path, [.pathOnly, .directory]).close()
    }

    /// fsync(2) of the directory `path` beneath this root, so that the names created or
    /// removed in it survive a crash.
    func syncDirectory(_ path: RelativePath) throws {
        let directory = try FileDescriptor.open(beneath: self, path, [.directory])
        try directory.closeAfter { try directory.sync() }
    }

    /// Renames without ever replacing: `EEXIST` when `to` exists.
    ///
    /// `renameat2(RENAME_NOREPLACE)` is atomic, but NFS, SMB and many FUSE filesystems refuse the
    /// flag (`EINVAL`). Then `linkat` + `unlinkat` gives the same guarantee for files and symlinks;
    /// where hard links are refused too (some FUSE filesystems), the name is claimed with
    /// `O_EXCL` and the file renamed over the claim (`claimAndRename`).
    ///
    /// For a file only this process uses as `from` (a temporary file): `linkat` + `unlinkat`
    /// of a shared name could unlink a file another device put there in between; such moves
    /// use `renameToPrivateName`.
    func renameNoReplace(_ from: SystemPath, to: SystemPath, in directory: FileDescriptor) throws {
        do {
            return try rename(from, to: to, in: directory, mode: .noReplace)
        } catch let error as Errno where error == .invalidArgument || error == .notSupported {
            // Not supported here, or invalid for another reason that the fallbacks will meet again.
        }
        do {
            try Sys.linkat(rawValue, from, directory.rawValue, to)
            try removeFile(from)
            return
        } catch let error as Errno where error == .notPermitted || error == .notSupported || error == .notImplemented {
            // No hard links on this filesystem, or `from` is a directory.
        }
        try claimAndRename(from, to: to, in: directory)
    }

    /// Moves a name others may use (`from`, in a shared cloud folder) to a name only this
    /// device uses (the versions store, a random temporary name): `EEXIST` when `to` exists.
    ///
    /// Never `link` + `unlink` here: another device that replaced `from` between the two
    /// calls would have its new file unlinked. A single rename moves exactly one file; where
    /// `RENAME_NOREPLACE` is refused, `to` is checked first, which is safe because nobody else
    /// creates that name.
    func renameToPrivateName(_ from: SystemPath, to: SystemPath, in directory: FileDescriptor) throws {
        do {
            return try rename(from, to: to, in: directory, mode: .noReplace)
        } catch let error as Errno where error == .invalidArgument || error == .notSupported {
            // Not supported here.
        }
        if (try? directory.metadata(of: to)) != nil { throw Errno.fileExists }
        try rename(from, to: to, in: directory, mode: .replace)
    }
}
