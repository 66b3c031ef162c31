import Glibc
import NimbusVocabulary

extension FileDescriptor {
    /// Removes the directory `name` of this directory and everything in it (`rm -r`), for a
    /// staging folder left by an interrupted upload. Symlinks are removed, never followed:
    /// each directory is opened beneath its parent refusing symlinks, and one swapped in for a
    /// directory meanwhile fails the open (`ELOOP`/`ENOTDIR`) rather than lead elsewhere.
    func removeTree(_ name: SystemPath) throws {
        let directory = try FileDescriptor.open(beneath: self, RelativePath(validating: name.bytes), [.directory, .noFollow])
        let stream: OpaquePointer
        do {
            stream = try Sys.openDirectoryStream(directory.rawValue)
        } catch {
            try? directory.close()
            throw error
        }
        do {
            defer { try? Sys.closeDirectoryStream(stream) }
            let inside = FileDescriptor(rawValue: Sys.descriptor(of: stream))
            // Names first, removals after: a directory changed while it is read may skip entries.
            var entries: [(name: SystemPath, isDirectory: Bool)] = []
            while let (entry, type) = try Sys.nextDirectoryEntry(stream) {
                let bytes = Array(UnsafeRawBufferPointer(start: entry, count: strlen(entry)))
                if bytes == [0x2E] || bytes == [0x2E, 0x2E] { continue }
                var isDirectory = type == UInt8(DT_DIR)
                if type == UInt8(DT_UNKNOWN) {
                    var status = stat()
                    isDirectory = (try? Sys.fstatat(inside.rawValue, entry, AT_SYMLINK_NOFOLLOW, into: &status)) != nil
                        && status.st_mode & S_IFMT == S_IFDIR
                }
                entries.append((SystemPath(bytes: bytes), isDirectory))
            }
            for entry in entries {
                do {
                    if entry.isDirectory { try inside.removeTree(entry.name) } else { try inside.removeFile(entry.name) }
                } catch let error as Errno where error == .noSuchFile {
                    continue  // Gone meanwhile.
                }
            }
        }
        try removeDirectory(name)
    }
}
