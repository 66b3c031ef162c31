import Glibc
import NimbusVocabulary

/// Lists a directory tree below a root: every entry's path and lstat metadata, the target of
/// each symlink, parents before children. Symlinks are reported, never followed; FIFOs,
/// sockets and devices are reported as `.special` and never opened.
///
/// It is built for trees of hundreds of thousands of files: one `fstatat` per entry on the
/// name `readdir` returned, one allocation per entry (its path), no `String` per name. The
/// `d_type` readdir offers is not used: the metadata needs the `fstatat` anyway, and some
/// filesystems report `DT_UNKNOWN`.
///
/// Each directory is opened with `openat2` beneath the root, refusing symlinks anywhere on
/// the way, and read to the end before its subdirectories are visited, so at most two
/// descriptors are open however deep the tree is, and a directory swapped for a symlink
/// during the walk is refused rather than followed.
public struct Scanner {
    private let root: FileDescriptor

    public init(root: FileDescriptor) { self.root = root }

    /// Every entry below `directory` (not `directory` itself). `descend` is asked for each
    /// subdirectory before it is entered; an entry it refuses is still reported. A
    /// subdirectory that cannot be listed (unreadable, vanished, replaced by a symlink) goes
    /// to `problems` and the walk goes on; only a failure on `directory` itself is thrown,
    /// and what `descend` or `checkpoint` throws (a stop), which ends the walk at once.
    /// `checkpoint` is asked every `CheckpointInterval.scanEntries` entries, inside a
    /// listing too: one folder may hold 100 000 files.
    public func scan(_ directory: RelativePath, descend: (RelativePath) throws -> Bool,
                     checkpoint: Checkpoint = {}) throws -> ScanResult {
        try withUnsafeTemporaryAllocation(byteCount: Self.linkBufferSize, alignment: 1) { linkBuffer in
            var walk = Walk(root: root, linkBuffer: linkBuffer)
            try walk.list(directory, descend: descend, checkpoint: checkpoint)
            while let next = walk.pending.popLast() {
                do {
                    try walk.list(next, descend: descend, checkpoint: checkpoint)
                } catch let problem as SystemError {
                    walk.result.problems.append(problem)
                    walk.result.incomplete.append(next)
                }
            }
            return walk.result
        }
    }

    /// Linux limits symlink targets to PATH_MAX; a target that fills the buffer anyway (a
    /// network filesystem need not enforce the limit) is read again into a growing one.
    private static let linkBufferSize = 4096
}

/// The state of one scan: what was found, and the directories still to list.
private struct Walk {
    let root: FileDescriptor
    let linkBuffer: UnsafeMutableRawBufferPointer
    var result = ScanResult()
    /// Directories waiting to be listed; the last one is next.
    var pending: [RelativePath] = []
    /// Reused for every entry.
    var status = stat()

    init(root: FileDescriptor, linkBuffer: UnsafeMutableRawBufferPointer) {
        self.root = root
        self.linkBuffer = linkBuffer
    }

    /// Appends the entries of `directory` to the result and its subdirectories (those
    /// `descend` accepts) to `pending`. Throws only when the directory cannot be opened;
    /// a failure half-way is recorded as a problem, keeping what was read.
    mutating func list(_ directory: RelativePath, descend: (RelativePath) throws -> Bool, checkpoint: Checkpoint) throws {
        let stream = try attributing("open", directory.shown) {
            let fd = try FileDescriptor.open(beneath: root, directory, [.directory, .noFollow])
            do {
                return try Sys.openDirectoryStream(fd.rawValue)
            } catch {
                try? fd.close()
                throw error
            }
        }
        defer { try? Sys.closeDirectoryStream(stream) }
        let fd = Sys.descriptor(of: stream)
        let prefix = directory.isRoot ? [] : directory.bytes + [UInt8(ascii: "/")]
        var subdirectories: [RelativePath] = []
        while true {
            let name: UnsafePointer<CChar>
            do {
                guard let next = try Sys.nextDirectoryEntryName(stream) else { break }
                name = next
            } catch let error as Errno {
                result.problems.append(error.at("readdir", directory.shown))
                result.incomplete.append(directory)
                break
            }
            if isDotOrDotDot(name) { continue }
            let path = RelativePath(unchecked: joined(prefix, name))
            guard let metadata = inspect(name, in: fd, path: path) else { continue }
            result.entries.append((path, metadata))
            if result.entries.count % CheckpointInterval.scanEntries == 0 { try checkpoint() }
            if metadata.kind == .directory, try descend(path) { subdirectories.append(path) }
        }
        pending.append(contentsOf: subdirectories.reversed())
    }

    /// lstat of one entry, with the target when it is a symlink. Nil when the entry vanished
    /// since readdir listed it (it is gone, so it is not reported); other failures are
    /// recorded as problems.
    private mutating func inspect(_ name: UnsafePointer<CChar>, in fd: Int32, path: RelativePath) -> FileMetadata? {
        do {
            try Sys.fstatat(fd, name, AT_SYMLINK_NOFOLLOW, into: &status)
            guard status.st_mode & S_IFMT == S_IFLNK else { return FileMetadata(status) }
            return FileMetadata(status, symlinkTarget: try readTarget(name, in: fd))
        } catch let error as Errno {
            if error != .noSuchFile {
                result.problems.append(error.at("lstat", path.shown))
                result.incomplete.append(path)
            }
            return nil
        } catch {
            preconditionFailure("the seam throws only Errno: \(error)")
        }
    }

    private func readTarget(_ name: UnsafePointer<CChar>, in fd: Int32) throws -> [UInt8] {
        let count = try Sys.readlinkat(fd, name, into: linkBuffer)
        if count < linkBuffer.count { return Array(linkBuffer[..<count]) }
        let bytes = Array(UnsafeRawBufferPointer(start: name, count: strlen(name)))
        return try Sys.readlinkat(fd, SystemPath(bytes: bytes))
    }
}

private func isDotOrDotDot(_ name: UnsafePointer<CChar>) -> Bool {
    let dot = CChar(UInt8(ascii: "."))
    return name[0] == dot && (name[1] == 0 || (name[1] == dot && name[2] == 0))
}

/// `prefix` followed by the NUL-terminated `name`, in one allocation.
private func joined(_ prefix: [UInt8], _ name: UnsafePointer<CChar>) -> [UInt8] {
    let length = strlen(name)
    return [UInt8](unsafeUninitializedCapacity: prefix.count + length) { buffer, count in
        let base = buffer.baseAddress!
        if !prefix.isEmpty {
            prefix.withUnsafeBufferPointer { base.update(from: $0.baseAddress!, count: prefix.count) }
        }
        UnsafeMutableRawPointer(base + prefix.count).copyMemory(from: name, byteCount: length)
        count = prefix.count + length
    }
}
