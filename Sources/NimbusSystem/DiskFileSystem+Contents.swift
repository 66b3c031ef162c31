import Glibc
import NimbusVocabulary

// File contents: reading, hashing, atomic writes and copies, extended attributes.

extension DiskFileSystem {
    /// xxHash64 of the content, read through a 1 MiB buffer. Throws `CopyError.sourceChanged`
    /// when the file is written to while it is read (the hash would match no version of it),
    /// `CopyError.notAFile` when it is not a regular file. `checkpoint` is asked after each MiB.
    public func contentHash(of path: RelativePath, checkpoint: Checkpoint) throws -> ContentHash {
        try withRegularFile(path) { file, before in try file.contentHash(path: path, status: before, checkpoint: checkpoint) }
    }

    /// The whole file; `EFBIG` when it is larger than `limit`.
    public func readFile(_ path: RelativePath, limit: Int) throws -> [UInt8] {
        try withRegularFile(path) { file, status in
            guard status.st_size <= limit else { throw Errno.fileTooLarge.at("read", path.shown) }
            // One byte more than the fstat said, to notice a file that grew since.
            var contents = [UInt8](repeating: 0, count: Int(status.st_size) + 1)
            var count = 0
            while true {
                if count == contents.count {
                    contents += repeatElement(0, count: min(contents.count, limit - count + 1))
                }
                let read = try attributing("read", path.shown) {
                    try contents.withUnsafeMutableBytes {
                        try file.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[count...]))
                    }
                }
                if read == 0 { break }
                count += read
                guard count <= limit else { throw Errno.fileTooLarge.at("read", path.shown) }
            }
            contents.removeSubrange(count...)
            return contents
        }
    }

    /// Writes a new file beside `path` (or in the temporary directory), syncs it, renames it
    /// over `path` and syncs the directory: readers see the old content or the new, whole.
    public func writeFile(_ path: RelativePath, contents: [UInt8], mode: UInt32) throws {
        try withRoot { root in
            let temporary = try TemporaryFile.create(beneath: root, temporaryPlacement(near: path))
            do {
                try attributing("write", temporary.path.shown) {
                    try temporary.descriptor.writeAll(contents)
                    try temporary.descriptor.setPermissions(mode)
                    try temporary.descriptor.sync()
                }
            } catch {
                temporary.abandon(beneath: root)
                throw error
            }
            do {
                try attributing("close", temporary.path.shown) { try temporary.descriptor.close() }
                try attributing("rename", path.shown) {
                    try root.withParent(of: temporary.path) { fromDirectory, fromName in
                        try root.withParent(of: path) { toDirectory, toName in
                            try fromDirectory.rename(fromName, to: toName, in: toDirectory, mode: .replace)
                        }
                    }
                }
            } catch {
                temporary.remove(beneath: root)
                throw error
            }
            try attributing("fsync", path.parent.shown) { try root.syncDirectory(path.parent) }
        }
    }

    public func prepareCopy(of source: RelativePath, from sourceSystem: DiskFileSystem, expected: FileMetadata,
                            durable: Bool, progress: (Int64) throws -> Void) throws -> PreparedCopy {
        // The protocol does not say where the copy will go; the engine installs it at the
        // same path as the source, so its directory here is the best guess for "next to it".
        try prepareCopy(of: source, from: sourceSystem, expected: expected, into: temporaryPlacement(near: source),
                        durable: durable, progress: progress)
    }

    public func prepareCopy(of source: RelativePath, from sourceSystem: DiskFileSystem, expected: FileMetadata,
                            staged: RelativePath, durable: Bool, progress: (Int64) throws -> Void) throws -> PreparedCopy {
        try prepareCopy(of: source, from: sourceSystem, expected: expected, into: .staged(staged), durable: durable,
                        progress: progress)
    }

    private func prepareCopy(of source: RelativePath, from sourceSystem: DiskFileSystem, expected: FileMetadata,
                             into placement: TemporaryPlacement, durable: Bool,
                             progress: (Int64) throws -> Void) throws -> PreparedCopy {
        try sourceSystem.withRoot { sourceRoot in
            try rootDirectory.withDescriptorAndDevice { root, device in
                // A destination checked by content (a shared network cloud) needs the hash of
                // every file copied to it: read from the source, not back through the network.
                try Copier(sourceRoot: sourceRoot, destinationRoot: root, destinationDevice: device)
                    .prepare(source, expected: expected, into: placement, durable: durable,
                             hashing: writeProtocol.verifiesContent, progress: progress)
            }
        }
    }

    /// Only `renameat2(RENAME_NOREPLACE)`: the fallbacks of `rename` for filesystems without it
    /// (`link`, a name claimed with `O_EXCL`) work for files, not folders.
    public func publishFolder(_ staged: RelativePath, at destination: RelativePath) throws -> Bool {
        guard writeProtocol.create == .renameNoReplace else { return false }
        defer { DirectoryCache.forget() }  // A folder moved.
        return try withRoot { root in
            try attributing("rename", "\(staged.shown) -> \(destination.shown)") {
                try root.withParent(of: staged) { fromDirectory, fromName in
                    try root.withParent(of: destination) { toDirectory, toName in
                        do {
                            try fromDirectory.rename(fromName, to: toName, in: toDirectory, mode: .noReplace)
                            return true
                        } catch let error as Errno where Self.refusedPublish.contains(error) {
                            return false
                        }
                    }
                }
            }
        }
    }

    /// The name is taken (a file, a folder), or the filesystem refuses the flag.
    private static let refusedPublish: Set<Errno> = [.fileExists, .directoryNotEmpty, .invalidArgument, .notSupported,
                                                     .notImplemented]

    public func install(_ copy: PreparedCopy, at destination: RelativePath, replacing: FileMetadata?,
                        displacedTo: RelativePath?, durable: Bool) throws -> FileMetadata {
        try install(copy, at: destination, replacing: replacing, expectedHash: nil, displacedTo: displacedTo, durable: durable)
    }

    public func install(_ copy: PreparedCopy, at destination: RelativePath, replacing: FileMetadata?,
                        expectedHash: ContentHash?, displacedTo: RelativePath?, durable: Bool) throws -> FileMetadata {
        try withRoot { root in
            try Installer(root: root, refusesOpenWriters: protectsOpenWriters, writeProtocol: writeProtocol).install(
                copy, at: destination, replacing: replacing, expectedHash: expectedHash, displacedTo: displacedTo,
                durable: durable)
        }
    }

    public func moveAside(_ path: RelativePath, to target: RelativePath, expected: FileMetadata, hash: ContentHash?) throws {
        try withRoot { root in
            try Installer(root: root, writeProtocol: writeProtocol).moveAside(path, to: target, expected: expected, hash: hash)
        }
    }

    public func discard(_ copy: PreparedCopy) {
        try? withRoot { root in Installer(root: root).discard(copy) }
    }

    /// Only the `user.` namespace: the others belong to the system (ACLs, capabilities,
    /// SELinux labels) and are not Nimbus's to read or change.
    public func extendedAttribute(_ name: String, of path: RelativePath) throws -> [UInt8]? {
        try userNamespace(name, "getxattr", path)
        return try inParent(of: path, "getxattr") { directory, entry in
            try directory.extendedAttribute(name, of: entry)
        }
    }

    public func setExtendedAttribute(_ name: String, of path: RelativePath, to value: [UInt8]) throws {
        try userNamespace(name, "setxattr", path)
        try inParent(of: path, "setxattr") { directory, entry in
            try directory.setExtendedAttribute(name, of: entry, to: value)
        }
    }

    public func removeExtendedAttribute(_ name: String, of path: RelativePath) throws {
        try userNamespace(name, "removexattr", path)
        try inParent(of: path, "removexattr") { directory, entry in
            try directory.removeExtendedAttribute(name, of: entry)
        }
    }

    private func userNamespace(_ name: String, _ operation: String, _ path: RelativePath) throws {
        guard name.utf8.starts(with: "user.".utf8) else {
            throw Errno.notSupported.at(operation, "\(path.shown) \(name)")
        }
    }

    /// Opens `path` for reading if it is a regular file and runs `body` with it and its fstat.
    private func withRegularFile<R>(_ path: RelativePath, _ body: (FileDescriptor, stat) throws -> R) throws -> R {
        try withRoot { root in
            // O_NONBLOCK: a FIFO must not hang the open; regular files ignore the flag.
            let file = try attributing("open", path.shown) {
                try FileDescriptor.open(beneath: root, path, [.noFollow, .nonBlocking])
            }
            return try file.closeAfter {
                let status = try attributing("fstat", path.shown) { try Sys.fstat(file.rawValue) }
                guard status.st_mode & S_IFMT == S_IFREG else { throw CopyError.notAFile(path) }
                return try body(file, status)
            }
        }
    }

    /// Where temporary files for `path` go: the configured directory (created when missing),
    /// else `path`'s directory when it exists here, else the root.
    func temporaryPlacement(near path: RelativePath) -> TemporaryPlacement {
        temporaryDirectory.map { .directory($0) } ?? .beside(path)
    }
}

extension FileDescriptor {
    /// Hash of this open regular file read from the start; `status` is its fstat before
    /// reading. Throws `CopyError.sourceChanged` when it was written to while it was read.
    /// `checkpoint` is asked after each chunk: what it throws (a stop) ends the hash.
    func contentHash(path: RelativePath, status before: stat, checkpoint: Checkpoint = {}) throws -> ContentHash {
        try? Sys.fadvise(rawValue, POSIX_FADV_SEQUENTIAL)  // Advice only.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        var hasher = XXHash64()
        var size: Int64 = 0
        while true {
            let count = try attributing("read", path.shown) { try read(into: buffer) }
            if count == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            size += Int64(count)
            try checkpoint()
        }
        let after = try attributing("fstat", path.shown) { try Sys.fstat(rawValue) }
        guard after.isUnchanged(since: before) else { throw CopyError.sourceChanged(path) }
        return ContentHash(value: hasher.finalize(), size: size)
    }

    /// Hash of the regular file `path` beneath this root, read through a fresh open.
    func contentHash(of path: RelativePath) throws -> ContentHash {
        let file = try attributing("open", path.shown) { try FileDescriptor.open(beneath: self, path, [.noFollow, .nonBlocking]) }
        return try file.closeAfter {
            let status = try attributing("fstat", path.shown) { try Sys.fstat(file.rawValue) }
            guard status.st_mode & S_IFMT == S_IFREG else { throw CopyError.notAFile(path) }
            return try file.contentHash(path: path, status: status)
        }
    }
}

