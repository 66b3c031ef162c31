import Glibc
import NimbusVocabulary
import Synchronization

/// The real `FileSystem`: a directory tree on a local disk or a network mount.
///
/// Every operation resolves its path with `openat2` beneath the root directory, refusing
/// symlinks anywhere on the way, and acts on the final name with an *at call; so no path can
/// leave the root or pass through a symlink (one on the way fails with `ELOOP`). Errors are
/// `SystemError`s naming the operation and the path relative to the root ("." for the root).
///
/// The root directory is opened on first use and kept open; `checkRoot()` re-opens it when
/// the root path has come to name another directory (see `RootDirectory`).
///
/// Temporary files (copies in flight, `writeFile`) go to `temporaryDirectory` when one is
/// given (the cloud root uses `.nimbus/tmp/<device>`, created on demand), else next to their file.
///
/// With `protectsOpenWriters` (the local root, where the user's programs work), `install`
/// never replaces a file some program has open for writing (`CopyError.destinationInUse`).
public final class DiskFileSystem: FileSystem {
    public let root: SystemPath
    public let temporaryDirectory: RelativePath?
    public let protectsOpenWriters: Bool
    let rootDirectory: RootDirectory
    /// How files are put in place; `.local` until the engine adopts what a probe found.
    let writeProtocolBox = Mutex<WriteProtocol>(.local)
    var writeProtocol: WriteProtocol { writeProtocolBox.withLock { $0 } }

    public func adopt(_ writeProtocol: WriteProtocol) { writeProtocolBox.withLock { $0 = writeProtocol } }

    public init(root: SystemPath, temporaryDirectory: RelativePath? = nil, protectsOpenWriters: Bool = false) {
        self.root = root
        self.temporaryDirectory = temporaryDirectory
        self.protectsOpenWriters = protectsOpenWriters
        self.rootDirectory = RootDirectory(path: root)
    }

    /// stat(2) of the root path. When it now names another directory than the one in use (a
    /// filesystem unmounted from under it, a folder deleted and created again), the next
    /// operations use the new one; call it before each batch.
    public func checkRoot() throws -> FileMetadata { try rootDirectory.check() }

    public func revalidateRoot() throws { _ = try checkRoot() }

    /// Runs `body` with the root directory's descriptor, kept open until `body` returns.
    func withRoot<R>(_ body: (FileDescriptor) throws -> R) throws -> R {
        try rootDirectory.withDescriptor(body)
    }

    /// Runs `body` with the root's descriptor (for marks beneath it, say); not to be kept.
    public func withRootDescriptor<R>(_ body: (FileDescriptor) throws -> R) throws -> R { try withRoot(body) }

    /// Runs `body` with the directory holding `path` and its last component; a failure
    /// becomes a `SystemError` naming `operation` and `path`.
    func inParent<R>(of path: RelativePath, _ operation: String,
                     _ body: (FileDescriptor, SystemPath) throws -> R) throws -> R {
        try withRoot { root in
            try attributing(operation, path.shown) { try root.withParent(of: path, body) }
        }
    }

    public func metadata(of path: RelativePath) throws -> FileMetadata? {
        do {
            return try withRoot { root in
                try root.withParent(of: path) { directory, name in
                    var metadata = try directory.metadata(of: name)
                    if metadata.kind == .symlink { metadata.symlinkTarget = try directory.readSymlink(name) }
                    return metadata
                }
            }
        } catch let error as Errno where error == .noSuchFile || error == .notDirectory {
            return nil  // Not there, or a file where a directory on the way was expected.
        } catch let error as Errno {
            throw error.at("lstat", path.shown)
        }
    }

    public func scan(_ directory: RelativePath, descend: (RelativePath) throws -> Bool,
                     checkpoint: Checkpoint) throws -> ScanResult {
        try withRoot { root in try Scanner(root: root).scan(directory, descend: descend, checkpoint: checkpoint) }
    }

    public func makeDirectory(_ path: RelativePath, mode: UInt32) throws {
        // A kept descriptor of a folder removed behind our back would stand for this new one.
        defer { DirectoryCache.forget() }
        try inParent(of: path, "mkdir") { directory, name in
            try directory.makeDirectory(name, permissions: mode)
            // mkdir(2) applies the umask; the mode must be the one asked for.
            try Sys.fchmodat(directory.rawValue, name, mode_t(mode), flags: AT_SYMLINK_NOFOLLOW)
        }
    }

    public func makeSymlink(_ path: RelativePath, target: [UInt8]) throws {
        try inParent(of: path, "symlink") { directory, name in try directory.makeSymlink(name, target: target) }
    }

    public func rename(_ from: RelativePath, to: RelativePath, replacing: Bool) throws {
        defer { DirectoryCache.forget() }  // A folder may have moved.
        try withRoot { root in
            try attributing("rename", "\(from.shown) -> \(to.shown)") {
                try root.withParent(of: from) { fromDirectory, fromName in
                    try root.withParent(of: to) { toDirectory, toName in
                        if replacing {
                            try fromDirectory.rename(fromName, to: toName, in: toDirectory, mode: .replace)
                        } else if writeProtocol.create == .renameNoReplace {
                            try fromDirectory.renameNoReplace(fromName, to: toName, in: toDirectory)
                        } else {
                            try moveSharedName(fromName, in: fromDirectory, to: toName, in: toDirectory)
                        }
                    }
                }
            }
        }
    }

    /// A rename that never replaces, on a filesystem without `RENAME_NOREPLACE` that others
    /// write too: `from` is first renamed to a private name (one rename takes exactly one file,
    /// whatever another device did to the name), then put at `to` exclusively (`link`, or a name
    /// claimed with `O_EXCL`); if `to` is taken, it goes back to `from` the same way.
    private func moveSharedName(_ from: SystemPath, in fromDirectory: FileDescriptor, to: SystemPath,
                                in toDirectory: FileDescriptor) throws {
        // Not a temporary name: the start-up sweep must never delete a file stuck there.
        let aside = SystemPath(bytes: Array(".nimbus-moving-".utf8) + TemporaryFile.randomName().dropFirst(TemporaryName.prefix.count))
        try fromDirectory.renameToPrivateName(from, to: aside, in: fromDirectory)
        let exclusive = { (name: SystemPath, directory: FileDescriptor) throws in
            if self.writeProtocol.create == .hardLink {
                try fromDirectory.renameNoReplace(aside, to: name, in: directory)
            } else {
                try fromDirectory.claimAndRename(aside, to: name, in: directory)
            }
        }
        do {
            try exclusive(to, toDirectory)
        } catch {
            // Back where it was; should someone have taken that name meanwhile, the entry keeps
            // its `.nimbus-moving-` name (and syncs as a file of that name) rather than replace theirs.
            try? exclusive(from, fromDirectory)
            throw error
        }
    }

    public func removeFile(_ path: RelativePath) throws {
        try inParent(of: path, "unlink") { directory, name in try directory.removeFile(name) }
    }

    public func removeDirectory(_ path: RelativePath) throws {
        defer { DirectoryCache.forget() }
        try inParent(of: path, "rmdir") { directory, name in try directory.removeDirectory(name) }
    }

    /// Sets the mode and/or the mtime (nanoseconds) without following a final symlink. Linux
    /// symlinks have no mode of their own, so a mode given for one is ignored.
    public func setAttributes(_ path: RelativePath, mode: UInt32?, mtime: Int64?) throws {
        try inParent(of: path, "setattr") { directory, name in
            if let mode {
                do {
                    try Sys.fchmodat(directory.rawValue, name, mode_t(mode), flags: AT_SYMLINK_NOFOLLOW)
                } catch let error as Errno where error == .notSupported {
                    if try directory.metadata(of: name).kind != .symlink { throw error }
                }
            }
            if let mtime { try directory.setModificationTime(of: name, mtime) }
        }
    }

    /// The mode, then fsync(2) of the entry alone (a directory's fsync writes its inode too);
    /// syncfs(2) when the entry cannot be opened for reading (a mode without the owner's read bit).
    public func setModeDurably(_ path: RelativePath, to mode: UInt32) throws {
        try setAttributes(path, mode: mode, mtime: nil)
        let entry: FileDescriptor
        do {
            entry = try withRoot { root in try FileDescriptor.open(beneath: root, path, [.readOnly, .noFollow, .nonBlocking]) }
        } catch {
            return try synchronize()
        }
        try entry.closeAfter { try attributing("fsync", path.shown) { try entry.sync() } }
    }

    /// open(O_RDONLY|O_NOFOLLOW), fstat and fchmod on that descriptor: a chmod by path of
    /// someone else can come only between the fstat and the fchmod, and the entry changed is
    /// the one read. fchmod is refused on an O_PATH descriptor, so the entry must be readable:
    /// one that is not (no read bit for its owner, a placeholder its own daemon may not
    /// open) is read and changed by path, the window as wide as two system calls.
    public func changeMode(_ path: RelativePath, inode: UInt64, from expected: UInt32, to mode: UInt32, durable: Bool) throws -> Bool {
        let entry: FileDescriptor
        do {
            entry = try withRoot { root in try FileDescriptor.open(beneath: root, path, [.readOnly, .noFollow, .nonBlocking]) }
        } catch {
            guard let current = try metadata(of: path), current.inode == inode, current.mode == expected,
                  current.kind == .directory || current.kind == .file else { return false }
            if durable { try setModeDurably(path, to: mode) } else { try setAttributes(path, mode: mode, mtime: nil) }
            return true
        }
        return try entry.closeAfter {
            try attributing("fchmod", path.shown) {
                let current = try entry.metadata()
                guard current.inode == inode, current.mode == expected,
                      current.kind == .directory || current.kind == .file else { return false }
                try entry.setPermissions(mode)
                if durable { try entry.sync() }
                return true
            }
        }
    }

    public func isOpenForWriting(_ path: RelativePath) -> Bool {
        (try? withRoot { root in try root.withParent(of: path) { directory, name in directory.isOpenForWriting(name) } }) ?? false
    }

    public func isOpenElsewhere(_ path: RelativePath) -> Bool? {
        (try? withRoot { root in try root.withParent(of: path) { directory, name in directory.isOpenElsewhere(name) } }) ?? nil
    }

    public func synchronize() throws {
        try withRoot { root in try attributing("syncfs", ".") { try root.syncFileSystem() } }
    }

    public func spaceInfo() throws -> (available: Int64, total: Int64) {
        try withRoot { root in try attributing("statvfs", ".") { try root.spaceInfo() } }
    }

    /// Removes every file or symlink whose name starts with `TemporaryName.prefix`, anywhere in
    /// the tree. Meant for startup: a copy in flight at the same time would lose its file.
    public func removeTemporaryFiles() throws -> Int { try removeTemporaryFilesEverywhere(.all) }

    public func removeLeftoverCopies() throws -> Int {
        try removeTemporaryFilesEverywhere(TemporaryCleanup(copiesOnly: true, changedBefore: nil, skipsOpenFiles: false))
    }
}
