import NimbusVocabulary

// The syscalls, one method each, with Linux's errors in Linux's order. Each either succeeds
// or throws before changing anything.
extension MemoryTree {
    mutating func makeDirectory(_ path: RelativePath, mode: UInt32) throws {
        if path.isRoot && root == nil {
            makeRoot()
            return
        }
        try create(Inode(content: .directory([:]), mode: mode & 0o7777, mtime: clock()), at: path, "mkdir")
    }

    /// `mkdir -p`: creates what is missing (mode 0755), accepts directories already there.
    mutating func makeDirectories(_ path: RelativePath) throws {
        for prefix in [RelativePath.root] + Self.prefixes(of: path) {
            guard let existing = try lookup(prefix, "mkdir") else {
                try makeDirectory(prefix, mode: 0o755)
                continue
            }
            if inode(existing).kind != .directory {
                throw (prefix == path ? Errno.fileExists : Errno.notDirectory).at("mkdir", prefix)
            }
        }
    }

    mutating func makeSymlink(_ path: RelativePath, target: [UInt8]) throws {
        // symlink(2) refuses an empty target with ENOENT.
        if target.isEmpty { throw Errno.noSuchFile.at("symlink", path) }
        try create(Inode(content: .symlink(target), mode: 0o777, mtime: clock()), at: path, "symlink")
    }

    /// An atomic save: a new inode with the new bytes takes the name and the old one is
    /// dropped. Both must fit at the moment of the rename, as with a temporary file on disk.
    mutating func replaceFile(_ path: RelativePath, contents: [UInt8], mode: UInt32) throws {
        if path.isRoot { throw Errno.isDirectory.at("rename", path) }
        let parent = try writableParent(of: path, "open")
        let old = inode(parent).children?[path.name]
        if let old, inode(old).kind == .directory { throw Errno.isDirectory.at("rename", path) }
        try checkSpace(for: Int64(contents.count), "write", path)
        let number = allocate(Inode(content: .file(contents), mode: mode & 0o7777, mtime: clock()))
        setEntry(path.name, in: parent, to: number)
        if let old { release(old) }
    }

    /// Writes into the file at `path` in place (O_TRUNC or O_APPEND), creating it (0644) when
    /// missing.
    mutating func writeInPlace(_ path: RelativePath, _ bytes: [UInt8], appending: Bool) throws {
        guard let number = try lookup(path, "open") else {
            try create(Inode(content: .file(bytes), mode: 0o644, mtime: clock()), at: path, "open")
            return
        }
        switch inode(number).content {
        case .directory: throw Errno.isDirectory.at("open", path)
        case .symlink: throw Errno.tooManySymlinks.at("open", path)
        case .file where appending: try appendContent(of: number, bytes, "write", path)
        case .file: try setContent(of: number, to: bytes, "write", path)
        }
    }

    /// rename(2), or renameat2(2) with RENAME_NOREPLACE when `replacing` is false.
    mutating func rename(_ from: RelativePath, to: RelativePath, replacing: Bool) throws {
        let operation = "rename"
        // The root is a mount point as far as the engine is concerned.
        if from.isRoot { throw Errno.busy.at(operation, from) }
        if to.isRoot { throw Errno.busy.at(operation, to) }
        let fromParent = try writableParent(of: from, operation)
        let toParent = try writableParent(of: to, operation)
        guard let moving = inode(fromParent).children?[from.name] else { throw Errno.noSuchFile.at(operation, from) }
        let target = inode(toParent).children?[to.name]
        if target != nil && !replacing { throw Errno.fileExists.at(operation, to) }
        // A directory cannot move into itself; a path cannot replace a directory above it.
        if from.contains(to) && from != to { throw Errno.invalidArgument.at(operation, to) }
        if to.contains(from) && from != to { throw Errno.directoryNotEmpty.at(operation, to) }
        // A directory moved to another parent has its `..` rewritten: it must be writable too.
        if fromParent != toParent && inode(moving).kind == .directory { try checkWritable(moving, operation, from) }
        if let target {
            if target == moving { return }  // the same entry: rename(2) does nothing
            try checkReplaceable(target, by: moving, at: to)
        }
        setEntry(from.name, in: fromParent, to: nil)
        setEntry(to.name, in: toParent, to: moving)
        stampChange(moving)
        if let target { release(target) }
    }

    /// What rename(2) says before replacing `target` with `moving`.
    private func checkReplaceable(_ target: UInt64, by moving: UInt64, at path: RelativePath) throws {
        switch (inode(moving).kind == .directory, inode(target).children) {
        case (false, .some): throw Errno.isDirectory.at("rename", path)
        case (true, nil): throw Errno.notDirectory.at("rename", path)
        case (true, let children?) where !children.isEmpty: throw Errno.directoryNotEmpty.at("rename", path)
        default: return
        }
    }

    /// unlink(2): files and symlinks only.
    mutating func removeFile(_ path: RelativePath) throws {
        if path.isRoot { throw Errno.isDirectory.at("unlink", path) }
        let parent = try writableParent(of: path, "unlink")
        guard let number = inode(parent).children?[path.name] else { throw Errno.noSuchFile.at("unlink", path) }
        if inode(number).kind == .directory { throw Errno.isDirectory.at("unlink", path) }
        setEntry(path.name, in: parent, to: nil)
        release(number)
    }

    /// rmdir(2): empty directories only.
    mutating func removeDirectory(_ path: RelativePath) throws {
        if path.isRoot { throw Errno.busy.at("rmdir", path) }
        let parent = try writableParent(of: path, "rmdir")
        guard let number = inode(parent).children?[path.name] else { throw Errno.noSuchFile.at("rmdir", path) }
        guard let children = inode(number).children else { throw Errno.notDirectory.at("rmdir", path) }
        if !children.isEmpty { throw Errno.directoryNotEmpty.at("rmdir", path) }
        setEntry(path.name, in: parent, to: nil)
        release(number)
    }

    /// `rm -r`; removing the root leaves the filesystem without one until it is made again.
    mutating func removeRecursively(_ path: RelativePath) throws {
        guard !path.isRoot else {
            guard let root else { throw Errno.noSuchFile.at("unlink", path) }
            release(root)
            return
        }
        let parent = try parentDirectory(of: path, "unlink")
        guard let number = inode(parent).children?[path.name] else { throw Errno.noSuchFile.at("unlink", path) }
        setEntry(path.name, in: parent, to: nil)
        release(number)
    }

    /// Without following a final symlink. Linux symlinks have no mode of their own, so a mode
    /// given for one is ignored (as DiskFileSystem does); their mtime can be set.
    mutating func setAttributes(_ path: RelativePath, mode: UInt32?, mtime: Int64?) throws {
        let number = try existing(path, "setattr")
        let isSymlink = inode(number).kind == .symlink
        modify(number) { inode in
            if let mode, !isSymlink { inode.mode = mode & 0o7777 }
            if let mtime { inode.mtime = mtime }
        }
    }

    /// `(name, metadata)` of each entry of a directory, in byte order. An unprivileged reader
    /// needs the owner's read and search bits (EACCES otherwise).
    func list(_ directory: RelativePath) throws -> [(name: [UInt8], metadata: FileMetadata)] {
        let number = try existing(directory, "open")
        guard inode(number).children != nil else { throw Errno.notDirectory.at("open", directory) }
        guard inode(number).mode & 0o500 == 0o500 else { throw Errno.permissionDenied.at("open", directory) }
        return sortedChildren(of: number).map { (name: $0.name, metadata: metadata($0.number)) }
    }

    /// Every directory above and including `path`, outermost first, without the root.
    static func prefixes(of path: RelativePath) -> [RelativePath] {
        var prefix = RelativePath.root
        return path.components.map { name in
            prefix = child(of: prefix, named: name)
            return prefix
        }
    }
}
