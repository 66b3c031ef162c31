import Glibc
import NimbusVocabulary

/// Finds the temporary files a crash left anywhere below a root, reading names only.
///
/// At startup every file of both roots would otherwise be lstat'ed once more just to look at
/// its name: here a directory is known by the type `readdir` reports, and `lstat` is asked
/// only where the filesystem does not report one (`DT_UNKNOWN`). Symlinks are never followed,
/// and every directory is opened beneath the root refusing symlinks on the way, as in `Scanner`.
struct TemporarySweep {
    let root: FileDescriptor

    /// Every entry below the root named like a temporary file that is not a directory.
    /// Directories that cannot be read are skipped: what cannot be listed cannot be removed.
    func temporaryFiles() throws -> [RelativePath] {
        var found: [RelativePath] = []
        var pending: [RelativePath] = []
        try list(.root, found: &found, pending: &pending)
        while let next = pending.popLast() {
            try? list(next, found: &found, pending: &pending)
        }
        return found
    }

    private func list(_ directory: RelativePath, found: inout [RelativePath], pending: inout [RelativePath]) throws {
        let fd = try FileDescriptor.open(beneath: root, directory, [.directory, .noFollow])
        let stream: OpaquePointer
        do {
            stream = try Sys.openDirectoryStream(fd.rawValue)
        } catch {
            try? fd.close()
            throw error
        }
        defer { try? Sys.closeDirectoryStream(stream) }
        let dirfd = Sys.descriptor(of: stream)
        var status = stat()
        while let (name, type) = try Sys.nextDirectoryEntry(stream) {
            let bytes = UnsafeRawBufferPointer(start: name, count: strlen(name))
            let dot = UInt8(ascii: ".")
            if bytes.count <= 2 && bytes[0] == dot && (bytes.count == 1 || bytes[1] == dot) { continue }
            var isDirectory = type == UInt8(DT_DIR)
            if type == UInt8(DT_UNKNOWN) {
                guard (try? Sys.fstatat(dirfd, name, AT_SYMLINK_NOFOLLOW, into: &status)) != nil else { continue }
                isDirectory = status.st_mode & S_IFMT == S_IFDIR
            }
            let path = { (try? directory.appending(name: Array(bytes))) }
            if isDirectory {
                if let path = path() { pending.append(path) }
            } else if bytes.starts(with: TemporaryName.prefix), let path = path() {
                found.append(path)
            }
        }
    }
}
