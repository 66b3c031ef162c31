import NimbusVocabulary

// prepareCopy / install / discard, following NimbusSystem's `Copier`: the source is opened
// and checked against the plan, copied `copyChunkSize` bytes at a time, and checked again.
// The copy takes the source's lock and then this filesystem's, never both at once, so two
// sides can copy to each other concurrently and a test can edit the source between chunks.
extension MemoryFileSystem {
    public var duringCopy: CopyHook? {
        get { copyHook.withLock { $0 } }
        set { copyHook.withLock { $0 = newValue } }
    }

    public func prepareCopy(of source: RelativePath, from sourceSystem: MemoryFileSystem, expected: FileMetadata,
                            durable: Bool, progress: (Int64) throws -> Void) throws -> PreparedCopy {
        try prepareCopy(of: source, from: sourceSystem, expected: expected, staged: nil, progress: progress)
    }

    public func prepareCopy(of source: RelativePath, from sourceSystem: MemoryFileSystem, expected: FileMetadata,
                            staged: RelativePath, durable: Bool, progress: (Int64) throws -> Void) throws -> PreparedCopy {
        try prepareCopy(of: source, from: sourceSystem, expected: expected, staged: Optional(staged), progress: progress)
    }

    private func prepareCopy(of source: RelativePath, from sourceSystem: MemoryFileSystem, expected: FileMetadata,
                             staged: RelativePath?, progress: (Int64) throws -> Void) throws -> PreparedCopy {
        guard expected.kind == .file else { throw CopyError.notAFile(source) }
        let opened = try sourceSystem.tree.withLock { try $0.openForCopy(source, expected: expected) }
        let temporary = try tree.withLock { tree in
            guard let staged else { return try tree.createTemporaryFile(for: source, in: temporaryDirectory) }
            _ = try tree.create(Inode(content: .file([]), mode: 0o600, mtime: tree.clock()), at: staged, "open")
            return staged
        }
        do {
            var copied: Int64 = 0
            while copied < opened.metadata.size {
                let chunk = try sourceSystem.tree.withLock { try $0.read(opened, at: copied, count: copyChunkSize) }
                try tree.withLock { tree in
                    // Never recreated: a temporary file removed under a running copy fails it.
                    let number = try tree.existing(temporary, "write")
                    try tree.appendContent(of: number, chunk, "write", temporary)
                }
                copied += Int64(chunk.count)
                try progress(copied)
                duringCopy?(source, copied)
            }
            try sourceSystem.tree.withLock { try $0.checkUnchanged(opened) }
            try tree.withLock {
                try $0.setAttributes(temporary, mode: opened.metadata.mode, mtime: opened.metadata.mtime)
            }
            return PreparedCopy(temporary: temporary, source: opened.metadata, bytesCopied: copied)
        } catch {
            removeTemporaryFile(temporary)
            throw error
        }
    }

    public func prepareFile(near path: RelativePath, contents: [UInt8], mode: UInt32, mtime: Int64,
                            attributes: [(String, [UInt8])], durable: Bool) throws -> PreparedCopy {
        try tree.withLock { tree in
            let temporary = try tree.createTemporaryFile(for: path, in: temporaryDirectory)
            do {
                let number = try tree.existing(temporary, "write")
                try tree.appendContent(of: number, contents, "write", temporary)
                for (name, value) in attributes { try tree.setExtendedAttribute(name, of: temporary, to: value) }
                try tree.setAttributes(temporary, mode: mode, mtime: mtime)
                let metadata = tree.metadata(number)
                return PreparedCopy(temporary: temporary, source: metadata, bytesCopied: Int64(contents.count))
            } catch {
                _ = try? tree.removeFile(temporary)
                throw error
            }
        }
    }

    /// A failed install removes the prepared copy, as DiskFileSystem's does: the caller
    /// prepares a new one against a new plan.
    public func install(_ copy: PreparedCopy, at destination: RelativePath, replacing: FileMetadata?,
                        displacedTo: RelativePath?, durable: Bool) throws -> FileMetadata {
        do {
            return try tree.withLock {
                try $0.install(copy, at: destination, replacing: replacing, displacedTo: displacedTo)
            }
        } catch {
            removeTemporaryFile(copy.temporary)
            throw error
        }
    }

    public func discard(_ copy: PreparedCopy) {
        removeTemporaryFile(copy.temporary)
    }

    /// Every file or symlink with a temporary name anywhere in the tree; call it only when no
    /// copy is under way.
    public func removeTemporaryFiles() throws -> Int {
        try tree.withLock { tree in
            guard tree.root != nil else { throw Errno.noSuchFile.at("open", RelativePath.root) }
            let leftovers = tree.allEntries().filter {
                TemporaryName.isTemporary($0.path.name) && tree.inode($0.number).kind != .directory
            }
            for leftover in leftovers { try tree.removeFile(leftover.path) }
            return leftovers.count
        }
    }

    /// The temporary files directly in `directory` that `cleanup` allows (by name, and by
    /// mtime for the age: a simulated tree has no ctime; nothing is ever open in it).
    public func removeTemporaryFiles(in directory: RelativePath, _ cleanup: TemporaryCleanup) throws -> Int {
        try tree.withLock { tree in
            guard tree.root != nil else { throw Errno.noSuchFile.at("open", RelativePath.root) }
            let leftovers = tree.allEntries().filter { entry in
                let inode = tree.inode(entry.number)
                return entry.path.parent == directory && inode.kind != .directory
                    && (cleanup.copiesOnly ? TemporaryName.isCopyTemporary(entry.path.name) : TemporaryName.isTemporary(entry.path.name))
                    && cleanup.changedBefore.map { WallInstant(mtime: inode.mtime) < $0 } ?? true
            }
            for leftover in leftovers { try tree.removeFile(leftover.path) }
            return leftovers.count
        }
    }

    /// Refuses a path that is not a temporary file's: a bad `PreparedCopy` must never cost a
    /// user's file.
    private func removeTemporaryFile(_ path: RelativePath) {
        guard TemporaryName.isTemporary(path.name) else { return }
        tree.withLock { tree in _ = try? tree.removeFile(path) }
    }
}

extension MemoryTree {
    /// An empty temporary file in `temporaryDirectory` (made on demand) or else beside the
    /// source's path on this side — `prepareCopy` is not told the destination, and a sync
    /// engine installs at the same relative path — or in the root when that directory is missing.
    mutating func createTemporaryFile(for source: RelativePath, in temporaryDirectory: RelativePath?) throws -> RelativePath {
        let directory: RelativePath
        if let temporaryDirectory {
            try makeDirectories(temporaryDirectory)
            directory = temporaryDirectory
        } else if let parent = try? lookup(source.parent, "open"), inode(parent).kind == .directory {
            directory = source.parent
        } else {
            directory = .root
        }
        while true {
            temporaryCounter += 1
            let name = TemporaryName.prefix + Array(String(temporaryCounter).utf8)
            let path = Self.child(of: directory, named: name)
            if try lookup(path, "open") == nil {
                try create(Inode(content: .file([]), mode: 0o600, mtime: clock()), at: path, "open")
                return path
            }
        }
    }

    /// Checks everything first and then changes the tree in one go: either the copy is in
    /// place (the old entry moved to `displacedTo` or dropped) or the destination is untouched.
    mutating func install(_ copy: PreparedCopy, at destination: RelativePath, replacing: FileMetadata?,
                          displacedTo: RelativePath?) throws -> FileMetadata {
        guard let temporary = try lookup(copy.temporary, "rename"), inode(temporary).kind == .file else {
            throw Errno.noSuchFile.at("rename", destination)
        }
        let current = try lookup(destination, "rename")
        switch (replacing, current) {
        case (nil, nil): break
        case (let expected?, let current?) where Self.isSameEntry(metadata(current), as: expected): break
        default: throw CopyError.destinationChanged(destination)
        }
        if let current {
            if let displacedTo {
                // The old entry must not carry the new one away, nor move inside itself.
                if destination.contains(copy.temporary) || destination.contains(displacedTo) {
                    throw Errno.invalidArgument.at("rename", displacedTo)
                }
                // `makeDirectories` fails before creating anything, and nothing can fail after it.
                try makeDirectories(displacedTo.parent)
                try rename(destination, to: try unusedName(like: displacedTo), replacing: false)
            } else if inode(current).kind == .directory {
                try removeDirectory(destination)  // ENOTEMPTY unless empty
            }
        }
        try rename(copy.temporary, to: destination, replacing: true)
        return metadata(temporary)
    }

    /// The plan's entry is still there, untouched: same inode, kind, size, mtime and mode.
    static func isSameEntry(_ current: FileMetadata, as expected: FileMetadata) -> Bool {
        current.inode == expected.inode && current.kind == expected.kind && current.size == expected.size
            && current.mtime == expected.mtime && current.mode == expected.mode
    }

    /// `path`, or when it is taken `path (2)`, `path (3)`…: a version never replaces another.
    private func unusedName(like path: RelativePath) throws -> RelativePath {
        var candidate = path
        var number = 1
        while try lookup(candidate, "rename") != nil {
            number += 1
            candidate = Self.child(of: path.parent, named: path.name + Array(" (\(number))".utf8))
        }
        return candidate
    }
}
