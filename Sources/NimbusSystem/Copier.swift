import Glibc
import NimbusVocabulary
import Synchronization

/// Where the temporary names of this process start (see `TemporaryFile.randomName`).
private let temporaryNameStart = UInt64.random(in: .min ... .max)
private let temporaryNameCounter = Atomic<UInt64>(0)

/// The first half of an atomic copy (DESIGN §3): one regular file from a source root into a
/// new temporary file of a destination root, with the source's mode and nanosecond mtime,
/// checked against what the plan expected before and after.
///
/// No temporary file survives a thrown error, whatever the error (a full disk included).
struct Copier {
    let sourceRoot: FileDescriptor
    let destinationRoot: FileDescriptor
    /// The destination root's filesystem (`st_dev`), for the memory of refused clones.
    var destinationDevice: UInt64? = nil

    /// Copies `source` into a new temporary file of the destination root, placed as `placement` says.
    ///
    /// Throws `CopyError.sourceChanged` when the source is not `expected` (kind, size, mtime,
    /// inode) when opened, or when its size, mtime, inode or ctime moved while it was copied,
    /// or when fewer bytes than its size could be read; `CopyError.notAFile` when `expected`
    /// is not a regular file; `SystemError` for everything else. With `hashing`, the source's
    /// content hash is read after the copy, before the check that it did not change, so it is
    /// the hash of exactly what was copied.
    func prepare(_ source: RelativePath, expected: FileMetadata, into placement: TemporaryPlacement, durable: Bool,
                 hashing: Bool = false, progress: (Int64) throws -> Void) throws -> PreparedCopy {
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
            if input.isRecentlyWritten(found, within: .seconds(2)) && input.isOpenForWritingElsewhere() {
                throw CopyError.sourceChanged(source)
            }

            let temporary = try TemporaryFile.create(beneath: destinationRoot, placement)
            let copied: Int64
            let written: FileMetadata
            var hash: ContentHash?
            do {
                let transfer = ContentTransfer(input: input, output: temporary.descriptor, source: source,
                                               temporary: temporary.path, destinationDevice: destinationDevice)
                copied = try transfer.run(status: before, progress: progress)
                try attributing("write", temporary.path.shown) {
                    // Mode and mtime last: writing would move the mtime again.
                    try temporary.descriptor.setPermissions(found.mode)
                    try temporary.descriptor.setModificationTime(found.mtime)
                    if durable { try temporary.descriptor.sync() }
                }
                // What is written, read while no one else can reach the file: installed or
                // published, it keeps these attributes (see `Installer.install`).
                written = try attributing("fstat", temporary.path.shown) { try temporary.descriptor.metadata() }
                if hashing {
                    // From the start: a sparse copy moved the offset, the others read at offsets.
                    _ = try attributing("lseek", source.shown) { try Sys.lseek(input.rawValue, 0, SEEK_SET) }
                    // Its checkpoint is the copy's progress, at the total copied: a stop ends it too.
                    hash = try input.contentHash(path: source, status: before) { try progress(copied) }
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
            return PreparedCopy(temporary: temporary.path, source: found, bytesCopied: copied, contentHash: hash,
                                written: written)
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

extension TemporaryName {
    /// A name no other temporary file or staging folder of this process has (`TemporaryFile.randomName`).
    public static func unique() -> [UInt8] { TemporaryFile.randomName() }
}

/// Where a temporary file goes: into a directory of its own (`.nimbus/tmp/<device>` of the
/// cloud root), or next to the file it will become.
enum TemporaryPlacement {
    /// This directory, created (with its parents) when it is missing.
    case directory(RelativePath)
    /// The directory of this path when it exists, else the root.
    case beside(RelativePath)
    /// Exactly this path, inside a staging folder (whose folders must exist): the file is
    /// created under its final name, and the folder is published whole (issue 15).
    case staged(RelativePath)
}

/// A new file named `TemporaryName.prefix` + 16 random hex digits, created with `O_EXCL` and
/// mode 0600 so nobody else can read a half-written copy.
struct TemporaryFile {
    let path: RelativePath
    let descriptor: FileDescriptor

    /// A new temporary file placed as `placement` says. The file is simply created: a missing
    /// directory is made (or, beside a file, the root taken) only when the create says it is
    /// missing, so a copy costs no mkdir or open of a directory that is there (issue 15).
    static func create(beneath root: FileDescriptor, _ placement: TemporaryPlacement) throws -> TemporaryFile {
        switch placement {
        case .directory(let directory):
            do {
                return try create(beneath: root, in: directory)
            } catch let error as Errno where error == .noSuchFile {
                // Missing (the first copy, or someone removed it): made again, then used.
                DirectoryCache.forget()
                try attributing("mkdir", directory.shown) { try root.makeDirectories(directory) }
            } catch let error as Errno {
                throw error.at("create", directory.shown)
            }
            return try attributing("create", directory.shown) { try create(beneath: root, in: directory) }
        case .beside(let path):
            let directory = path.parent
            do {
                return try create(beneath: root, in: directory)
            } catch let error as Errno where !directory.isRoot && Self.missingDirectory.contains(error) {
                // No such directory here (yet), or not a real one (a file, a symlink): the root.
                return try attributing("create", ".") { try create(beneath: root, in: .root) }
            } catch let error as Errno {
                throw error.at("create", directory.shown)
            }
        case .staged(let path):
            let descriptor = try attributing("create", path.shown) {
                try FileDescriptor.open(beneath: root, path, [.writeOnly, .create, .exclusive], permissions: 0o600)
            }
            return TemporaryFile(path: path, descriptor: descriptor)
        }
    }

    /// What openat2 answers when a directory on the way is missing, is not a directory or is
    /// a symlink (refused), or leads out of the root.
    private static let missingDirectory: Set<Errno> = [.noSuchFile, .notDirectory, .tooManySymlinks, .crossDevice]

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

    /// `prefix` + 16 hex digits, different for every call: a counter scattered by an odd
    /// multiplier (a bijection, so no two calls of this process repeat) from a start drawn
    /// once from the system's random source, rather than one getrandom(2) per file. The names
    /// need to be unique, not secret: every create is `O_EXCL`, and a taken name is skipped.
    static func randomName() -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        var value = (temporaryNameStart &+ temporaryNameCounter.add(1, ordering: .relaxed).oldValue) &* 0x9E37_79B9_7F4A_7C15
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

    /// Closes the file, and unlinks it when that fails (NFS reports some write errors, ENOSPC
    /// and EDQUOT, only here). Closes once whatever happens: a descriptor is released even by
    /// a failed close, and closing its number again could close a file another thread has
    /// just been given.
    func closeOrRemove(beneath root: FileDescriptor) throws {
        do {
            try attributing("close", path.shown) { try descriptor.close() }
        } catch {
            remove(beneath: root)
            throw error
        }
    }

    /// Unlinks the (closed) file, ignoring errors for the same reason.
    func remove(beneath root: FileDescriptor) {
        try? root.withParent(of: path) { directory, name in try directory.removeFile(name) }
    }
}
