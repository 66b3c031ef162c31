import Glibc

/// The first half of an atomic copy (DESIGN §3): one regular file from a source root into a
/// new temporary file of a destination root, with the source's mode and nanosecond mtime,
/// checked against what the plan expected before and after.
///
/// No temporary file survives a thrown error, whatever the error (a full disk included).
struct Copier {
    let sourceRoot: FileDescriptor
    let destinationRoot: FileDescriptor

    /// Copies `source` into a new temporary file in `directory` of the destination root.
    ///
    /// Throws `CopyError.sourceChanged` when the source is not `expected` (kind, size, mtime,
    /// inode) when opened, or when its size, mtime, inode or ctime moved while it was copied,
    /// or when fewer bytes than its size could be read; `CopyError.notAFile` when `expected`
    /// is not a regular file; `SystemError` for everything else. With `hashing`, the source's
    /// content hash is read after the copy, before the check that it did not change, so it is
    /// the hash of exactly what was copied.
    func prepare(_ source: RelativePath, expected: FileMetadata, into directory: RelativePath, durable: Bool,
                 hashing: Bool = false, progress: (Int64) -> Void) throws -> PreparedCopy {
        guard expected.kind == .file else { throw CopyError.notAFile(source) }
        let input = try openSource(source)
        return try input.closeAfter {
            let before = try attributing("fstat", source.shown) { try Sys.fstat(input.rawValue) }
            let found = FileMetadata(before)
            guard found.kind == expected.kind, found.size == expected.size, found.mtime == expected.mtime,
                  found.inode == expected.inode else { throw CopyError.sourceChanged(source) }
            // A file written moments ago and still open for writing is mid-rewrite (say,
            // truncated and not yet filled again): wait for the writer to close it. A file
            // quiet for a while is copied even if a process keeps it open (a log).
            if input.isRecentlyWritten(found, within: 2_000_000_000) && input.isOpenForWritingElsewhere() {
                throw CopyError.sourceChanged(source)
            }

            let temporary = try attributing("create", directory.shown) {
                try TemporaryFile.create(beneath: destinationRoot, in: directory)
            }
            let copied: Int64
            var hash: ContentHash?
            do {
                let transfer = ContentTransfer(input: input, output: temporary.descriptor,
                                               source: source, temporary: temporary.path)
                copied = try transfer.run(size: found.size, progress: progress)
                try attributing("write", temporary.path.shown) {
                    // Mode and mtime last: writing would move the mtime again.
                    try temporary.descriptor.setPermissions(found.mode)
                    try temporary.descriptor.setModificationTime(found.mtime)
                    if durable { try temporary.descriptor.sync() }
                }
                if hashing {
                    // From the start: a sparse copy moved the offset, the others read at offsets.
                    _ = try attributing("lseek", source.shown) { try Sys.lseek(input.rawValue, 0, SEEK_SET) }
                    hash = try input.contentHash(path: source, status: before)
                }
                let after = try attributing("fstat", source.shown) { try Sys.fstat(input.rawValue) }
                guard copied == found.size, after.isUnchanged(since: before) else {
                    throw CopyError.sourceChanged(source)
                }
            } catch {
                temporary.abandon(beneath: destinationRoot)
                throw error
            }
            do {
                // NFS reports some write errors (ENOSPC, EDQUOT) only here.
                try temporary.descriptor.close()
            } catch let error as Errno {
                temporary.remove(beneath: destinationRoot)
                throw error.at("close", temporary.path.shown)
            }
            return PreparedCopy(temporary: temporary.path, source: found, bytesCopied: copied, contentHash: hash)
        }
    }

    /// A source that vanished or turned into a symlink (or gained one on its path) since the
    /// scan has changed: the plan is stale, not the system broken.
    private func openSource(_ source: RelativePath) throws -> FileDescriptor {
        do {
            // O_NONBLOCK: a FIFO swapped in for the file must not hang the open.
            return try FileDescriptor.open(beneath: sourceRoot, source, [.noFollow, .nonBlocking])
        } catch let error as Errno where error == .noSuchFile || error == .notDirectory || error == .tooManySymlinks {
            throw CopyError.sourceChanged(source)
        } catch let error as Errno {
            throw error.at("open", source.shown)
        }
    }
}

extension stat {
    /// Whether nothing was written to the file between two fstat calls. The ctime catches
    /// writes that kept size and mtime (a same-size rewrite followed by `touch -d` to the old date).
    func isUnchanged(since before: stat) -> Bool {
        st_size == before.st_size && st_ino == before.st_ino
            && st_mtim.tv_sec == before.st_mtim.tv_sec && st_mtim.tv_nsec == before.st_mtim.tv_nsec
            && st_ctim.tv_sec == before.st_ctim.tv_sec && st_ctim.tv_nsec == before.st_ctim.tv_nsec
    }
}

/// A new file named `TemporaryName.prefix` + 16 random hex digits, created with `O_EXCL` and
/// mode 0600 so nobody else can read a half-written copy.
struct TemporaryFile {
    let path: RelativePath
    let descriptor: FileDescriptor

    static func create(beneath root: FileDescriptor, in directory: RelativePath) throws -> TemporaryFile {
        while true {
            let path = try directory.appending(name: randomName())
            do {
                let descriptor = try FileDescriptor.open(beneath: root, path, [.writeOnly, .create, .exclusive],
                                                         permissions: 0o600)
                return TemporaryFile(path: path, descriptor: descriptor)
            } catch let error as Errno where error == .fileExists {
                continue  // A 1 in 2^64 clash: draw another name.
            }
        }
    }

    /// `prefix` + 16 hex digits from the system's random source.
    static func randomName() -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        var value = UInt64.random(in: .min ... .max)
        var name = TemporaryName.prefix
        for _ in 0..<16 {
            name.append(digits[Int(value & 0xF)])
            value >>= 4
        }
        return name
    }

    /// Closes and unlinks the file, on an error path: errors here would hide the first one.
    func abandon(beneath root: FileDescriptor) {
        try? descriptor.close()
        remove(beneath: root)
    }

    /// Unlinks the (closed) file, ignoring errors for the same reason.
    func remove(beneath root: FileDescriptor) {
        try? root.withParent(of: path) { directory, name in try directory.removeFile(name) }
    }
}
