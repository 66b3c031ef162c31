import NimbusVocabulary

// What a test does to a side directly, as a user or another program would: edits that bump
// mtimes through the clock and keep inodes as the kernel would. For renames, use `rename`.
extension MemoryFileSystem {
    /// Writes over the file at `path` in place — same inode, new mtime — as an editor saving
    /// without a temporary file does. A missing file is created (0644), with any missing
    /// parent directories.
    public func write(_ path: RelativePath, _ bytes: [UInt8]) throws {
        try tree.withLock { tree in
            try tree.makeDirectories(path.parent)
            try tree.writeInPlace(path, bytes, appending: false)
        }
    }

    public func write(_ path: RelativePath, _ text: String) throws {
        try write(path, Array(text.utf8))
    }

    /// Appends in place (`>>`), creating the file and its parents when missing.
    public func append(_ path: RelativePath, _ bytes: [UInt8]) throws {
        try tree.withLock { tree in
            try tree.makeDirectories(path.parent)
            try tree.writeInPlace(path, bytes, appending: true)
        }
    }

    /// `mkdir -p`; `makeDirectories(.root)` brings back a removed root.
    public func makeDirectories(_ path: RelativePath) throws {
        try tree.withLock { try $0.makeDirectories(path) }
    }

    /// `rm -r`. Removing `.root` plays a deleted sync folder: every path is then missing.
    public func removeRecursively(_ path: RelativePath) throws {
        try tree.withLock { try $0.removeRecursively(path) }
    }

    /// Bytes of content that fit; lowering it below what is stored makes every write fail.
    public var capacity: Int64 {
        get { tree.withLock { $0.capacity } }
        set { tree.withLock { $0.capacity = newValue } }
    }
}
