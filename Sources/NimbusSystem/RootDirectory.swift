import Glibc
import NimbusVocabulary
import Synchronization

/// The open directory of a sync root, shared by every operation on it.
///
/// Holding the root open means that a rename of a directory above it, or a mount over a
/// directory inside it, cannot redirect operations half-way through a batch. But a root can
/// be replaced on purpose (a disk unmounted and the empty mount point left, a folder deleted
/// and created again), and a descriptor would keep serving the old, detached directory
/// forever. So `check()`, called before each batch, compares the directory the path names
/// now with the open one and re-opens when they differ.
///
/// The descriptor is closed when the last operation using it ends, never under one:
/// operations borrow it through `withDescriptor`.
final class RootDirectory: Sendable {
    let path: SystemPath
    private let current = Mutex<OpenDirectory?>(nil)

    init(path: SystemPath) { self.path = path }

    /// Runs `body` with the root's descriptor, opening the root on first use.
    func withDescriptor<R>(_ body: (FileDescriptor) throws -> R) throws -> R {
        try withDescriptorAndDevice { descriptor, _ in try body(descriptor) }
    }

    /// Runs `body` with the root's descriptor and its filesystem's `st_dev`.
    func withDescriptorAndDevice<R>(_ body: (FileDescriptor, UInt64) throws -> R) throws -> R {
        let directory = try current.withLock { $0 } ?? reopen()
        return try withExtendedLifetime(directory) { try body(directory.descriptor, directory.device) }
    }

    /// stat(2) of the root path (symlinks in it are followed: the user chose that path).
    /// When it names another directory than the open one, the next operations use the new one.
    func check() throws -> FileMetadata {
        let status = try attributing("stat", path) { try Sys.fstatat(AT_FDCWD, path, 0) }
        let open = current.withLock { $0 }
        if let open, open.device == UInt64(status.st_dev), open.inode == UInt64(status.st_ino) {
            return FileMetadata(status)
        }
        return try reopen().metadata
    }

    private func reopen() throws -> OpenDirectory {
        let opened = try attributing("open", path) {
            let fd = try FileDescriptor.open(path, [.directory])
            do {
                return OpenDirectory(descriptor: fd, metadata: try fd.metadata())
            } catch {
                try? fd.close()
                throw error
            }
        }
        current.withLock { $0 = opened }
        DirectoryCache.rootGeneration.add(1, ordering: .relaxed)
        return opened
    }
}

/// One open root directory; closed when no operation holds it any more.
private final class OpenDirectory: Sendable {
    let descriptor: FileDescriptor
    let metadata: FileMetadata
    var device: UInt64 { metadata.device }
    var inode: UInt64 { metadata.inode }

    init(descriptor: FileDescriptor, metadata: FileMetadata) {
        self.descriptor = descriptor
        self.metadata = metadata
    }

    deinit { try? descriptor.close() }
}
