import Glibc
import NimbusVocabulary

// Checking what was moved aside, on filesystems whose clients cache (DESIGN §3). Before a
// rename, `lstat` of a file on sshfs, NFS or an rclone mount may answer from a cache that is
// seconds old, and another machine may have replaced the file meanwhile; and a read through a
// fresh open is cut to the cached size (wrong bytes, not an error). A rename goes to the server
// and makes the client forget what it knew of the entry, so the file's attributes and content
// read after it are those of the file actually moved: that is what is checked.

extension Installer {
    /// Checks that the entry moved from `original` to `aside` is the one expected (attributes,
    /// and content when `hash` is given). If not, it is put back at `original` exclusively and
    /// `CopyError.notTheSyncedVersion` is thrown; if someone took `original` meanwhile it stays
    /// at `aside`, and the error says so.
    func verifyMoved(_ aside: RelativePath, from original: RelativePath, expected: FileMetadata,
                     hash: ContentHash?) throws {
        let moved = try attributing("lstat", aside.shown) {
            try root.withParent(of: aside) { directory, name in try directory.metadata(of: name) }
        }
        var same: Bool
        if let hash, expected.kind == .file {
            // The content decides, not the inode: some clients number inodes by path (an
            // rclone mount), so the file moved aside always has another one. Content equal
            // to the synced version is what makes replacing it safe.
            do {
                same = try moved.kind == .file && moved.size == expected.size && root.contentHash(of: aside) == hash
            } catch CopyError.sourceChanged {
                same = false  // Written to right now: not the synced version either way.
            }
        } else {
            same = moved.isSame(as: expected)
        }
        guard !same else { return }
        let putBack: Bool = try attributing("rename", "\(aside.shown) -> \(original.shown)") {
            try root.withParent(of: aside) { asideDirectory, asideName in
                try root.withParent(of: original) { directory, name in
                    do {
                        try createExclusively(asideName, in: asideDirectory, to: name, in: directory)
                        return true
                    } catch let error as Errno where error == .fileExists {
                        return false
                    }
                }
            }
        }
        throw CopyError.notTheSyncedVersion(original, keptAt: putBack ? nil : aside)
    }

    /// Moves `path` to `target` (a free name; `EEXIST` otherwise) after checking it is still
    /// `expected`, then checks what was moved as `verifyMoved` does.
    func moveAside(_ path: RelativePath, to target: RelativePath, expected: FileMetadata, hash: ContentHash?) throws {
        defer { if expected.kind == .directory { DirectoryCache.forget() } }
        try attributing("rename", "\(path.shown) -> \(target.shown)") {
            try root.withParent(of: path) { directory, name in
                let current: FileMetadata
                do {
                    current = try directory.metadata(of: name)
                } catch let error as Errno where error == .noSuchFile {
                    throw CopyError.destinationChanged(path)
                }
                guard current.isSame(as: expected) else { throw CopyError.destinationChanged(path) }
                try root.withParent(of: target) { targetDirectory, targetName in
                    do {
                        try directory.renameToPrivateName(name, to: targetName, in: targetDirectory)
                    } catch let error as Errno where error == .noSuchFile {
                        // Gone between the check and the rename (another device); the target's
                        // folder exists, the caller made it.
                        throw CopyError.destinationChanged(path)
                    }
                }
            }
        }
        try verifyMoved(target, from: path, expected: expected, hash: hash)
    }
}

extension FileDescriptor {
    /// The last resort of an exclusive create where neither `RENAME_NOREPLACE` nor hard links
    /// exist (some FUSE filesystems): the name is claimed with `open(O_CREAT|O_EXCL)`, which
    /// fails for everyone but one, and the file is renamed over the (empty) claim. Directories
    /// cannot be claimed so: they are checked, then renamed.
    func claimAndRename(_ from: SystemPath, to: SystemPath, in directory: FileDescriptor) throws {
        guard try metadata(of: from).kind == .file else {
            if (try? directory.metadata(of: to)) != nil { throw Errno.fileExists }
            return try rename(from, to: to, in: directory, mode: .replace)
        }
        let claim = try Sys.openat(directory.rawValue, to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        try? Sys.close(claim)
        do {
            try rename(from, to: to, in: directory, mode: .replace)
        } catch {
            // Only an empty file can still be the claim: where the claim is not exclusive on
            // the server (rclone), another device's file may have replaced it meanwhile.
            if let left = try? directory.metadata(of: to), left.kind == .file, left.size == 0 { try? directory.removeFile(to) }
            throw error
        }
    }
}
