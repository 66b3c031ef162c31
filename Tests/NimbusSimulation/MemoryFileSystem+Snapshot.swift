import NimbusVocabulary

extension MemoryFileSystem {
    /// One entry of `snapshot()`: a value copy, safe to keep and compare after the filesystem
    /// has moved on.
    public struct Node: Hashable, Sendable {
        public enum Content: Hashable, Sendable {
            case directory
            case file([UInt8])
            case symlink(target: [UInt8])
        }

        public var content: Content
        /// Exactly what `metadata(of:)` returned for this entry at the time of the snapshot.
        public var metadata: FileMetadata
        public var extendedAttributes: [String: [UInt8]]

        init(_ inode: Inode, metadata: FileMetadata) {
            switch inode.content {
            case .directory: content = .directory
            case .file(let bytes): content = .file(bytes)
            case .symlink(let target): content = .symlink(target: target)
            }
            self.metadata = metadata
            extendedAttributes = inode.extendedAttributes
        }
    }

    /// A value copy of every entry below the root, for invariant checks and comparisons.
    public func snapshot() -> [RelativePath: Node] {
        tree.withLock { tree in
            var nodes: [RelativePath: Node] = [:]
            for (path, number) in tree.allEntries() {
                nodes[path] = Node(tree.inode(number), metadata: tree.metadata(number))
            }
            return nodes
        }
    }
}
