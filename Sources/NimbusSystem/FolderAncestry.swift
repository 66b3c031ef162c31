import Glibc

/// Where a folder is in the tree as the kernel sees it: found by the kernel's own `..`, so a
/// symlink on the way or a bind mount is seen through, where the path's text would say two
/// folders are unrelated.
public struct FolderAncestry: Sendable, Equatable {
    /// The folder's identity; nil when the path does not exist (yet).
    public var folder: FileIdentity?
    /// The identities of the folder (or, when it does not exist, of the nearest folder above
    /// its path that does: where it would be created) and of every folder above it, up to `/`.
    public var lineage: [FileIdentity]

    public init(folder: FileIdentity?, lineage: [FileIdentity]) {
        self.folder = folder
        self.lineage = lineage
    }

    /// True when this folder is `other`, or would be inside it.
    public func isSameOrInside(_ other: FolderAncestry) -> Bool {
        guard let other = other.folder else { return false }
        return lineage.contains(other)
    }

    /// The ancestry of the folder `path` names. Nothing known (no lineage) when no part of
    /// the path can be opened.
    public static func of(_ path: SystemPath) -> FolderAncestry {
        var existing = path
        var opened = try? FileDescriptor.open(existing, [.directory, .pathOnly])
        while opened == nil {
            let parent = existing.parent
            if parent.bytes.isEmpty || parent == existing { return FolderAncestry(folder: nil, lineage: []) }
            existing = parent
            opened = try? FileDescriptor.open(existing, [.directory, .pathOnly])
        }
        guard var current = opened else { return FolderAncestry(folder: nil, lineage: []) }
        defer { try? current.close() }
        var lineage: [FileIdentity] = []
        // PATH_MAX bounds a folder's depth; the cap only keeps a kernel surprise from looping.
        while lineage.count < 4096, let metadata = try? current.metadata() {
            let identity = FileIdentity(device: metadata.device, inode: metadata.inode)
            if lineage.last == identity { break }  // "/" is its own parent
            lineage.append(identity)
            guard let parent = try? FileDescriptor.open("..", [.directory, .pathOnly], relativeTo: current) else { break }
            try? current.close()
            current = parent
        }
        return FolderAncestry(folder: existing == path ? lineage.first : nil, lineage: lineage)
    }
}
