import Glibc
import NimbusVocabulary

extension DiskFileSystem {
    public func prepareFile(near path: RelativePath, contents: [UInt8], mode: UInt32, mtime: Int64,
                            attributes: [(String, [UInt8])], durable: Bool) throws -> PreparedCopy {
        try withRoot { root in
            let temporary = try TemporaryFile.create(beneath: root, temporaryPlacement(near: path))
            let metadata: FileMetadata
            do {
                metadata = try attributing("write", temporary.path.shown) { () throws -> FileMetadata in
                    try temporary.descriptor.writeAll(contents)
                    for (name, value) in attributes {
                        try value.withUnsafeBytes { try Sys.fsetxattr(temporary.descriptor.rawValue, name, $0) }
                    }
                    try temporary.descriptor.setPermissions(mode)
                    try temporary.descriptor.setModificationTime(mtime)
                    if durable { try temporary.descriptor.sync() }
                    return try temporary.descriptor.metadata()
                }
            } catch {
                temporary.abandon(beneath: root)
                throw error
            }
            try temporary.closeOrRemove(beneath: root)
            return PreparedCopy(temporary: temporary.path, source: metadata, bytesCopied: Int64(contents.count))
        }
    }
}
