import NimbusVocabulary

/// A source file as a copy holds it open: the inode, not the path. Its `changeStamp` at
/// opening stands for the ctime the real copier compares before and after.
struct OpenedSource {
    let path: RelativePath
    let number: UInt64
    let changeStamp: UInt64
    /// What fstat said at opening; the prepared copy records this.
    let metadata: FileMetadata
}

// The source side of a copy, each call under the source filesystem's lock.
extension MemoryTree {
    /// Opens `source` for copying. As on disk, a source that vanished, turned into a symlink
    /// or gained one on its path, or no longer matches the plan's kind, size, mtime and inode
    /// has changed (`CopyError.sourceChanged`); an unreadable one is an error (EACCES).
    func openForCopy(_ source: RelativePath, expected: FileMetadata) throws -> OpenedSource {
        let number: UInt64?
        do {
            number = try lookup(source, "open")
        } catch let error as SystemError where [.notDirectory, .tooManySymlinks, .noSuchFile].contains(error.errno) {
            throw CopyError.sourceChanged(source)
        }
        guard let number, inode(number).kind != .symlink else { throw CopyError.sourceChanged(source) }
        // The open itself is refused first; a directory opens, and then differs from the plan.
        if inode(number).kind == .file { _ = try readableFile(source, "open") }
        let found = metadata(number)
        guard found.kind == expected.kind, found.size == expected.size, found.mtime == expected.mtime,
              found.inode == expected.inode else { throw CopyError.sourceChanged(source) }
        return OpenedSource(path: source, number: number, changeStamp: inode(number).changeStamp, metadata: found)
    }

    /// Up to `count` bytes from `offset` of the opened inode.
    ///
    /// On disk an open file stays readable after a rename over it or an unlink; here its inode
    /// is gone (or its number reused), so the copy fails at once with `sourceChanged` — the
    /// same outcome as any other change, which the check at the end would report anyway.
    func read(_ source: OpenedSource, at offset: Int64, count: Int) throws -> [UInt8] {
        try checkUnchanged(source)
        guard case .file(let bytes) = inode(source.number).content else { throw CopyError.sourceChanged(source.path) }
        let start = min(Int(offset), bytes.count)
        return Array(bytes[start..<min(start + count, bytes.count)])
    }

    /// Throws `sourceChanged` when anything touched the opened inode since it was opened.
    func checkUnchanged(_ source: OpenedSource) throws {
        guard let current = inodeIfLive(source.number), current.changeStamp == source.changeStamp else {
            throw CopyError.sourceChanged(source.path)
        }
    }
}
