import NimbusCore
import NimbusSystem
import NimbusVocabulary

extension PlaceholderMarker {
    /// Markers without files of their own (the simulation's) have no interrupted fills.
    public func undoInterruptedFill(_ path: RelativePath, current: FileMetadata, recorded: FileMetadata,
                                    cloud: FileMetadata) -> FileMetadata? { nil }
}

extension FanotifyPlaceholderMarker {
    /// See `RealNamePlaceholderFile.undoInterruptedFill`: the file's data is compared with the
    /// cloud file's before anything is punched, so an edit made while no daemon listened is
    /// never thrown away.
    public func undoInterruptedFill(_ path: RelativePath, current: FileMetadata, recorded: FileMetadata,
                                    cloud: FileMetadata) -> FileMetadata? {
        guard current.size == recorded.size, current.inode == recorded.inode, current.mtime != recorded.mtime else { return nil }
        do {
            let cloudRoot = try server.cloudRoot.map { $0 } ?? FileDescriptor.open(server.cloudRootPath!, [.directory])
            defer { if server.cloudRoot == nil { try? cloudRoot.close() } }
            let cloudFile = try FileDescriptor.open(beneath: cloudRoot, path, [.noFollow, .nonBlocking])
            return try cloudFile.closeAfter {
                try local.withRootDescriptor { root in
                    try RealNamePlaceholderFile.undoInterruptedFill(beneath: root, path, recorded: recorded, cloud: cloudFile,
                                                                    expected: cloud, stateAttribute: Placeholder.stateAttribute)
                }
            }
        } catch {
            server.log.warning("cannot tell whether \(path) is a fill cut short when nimbusd last stopped: \(error)")
            return nil
        }
    }
}
