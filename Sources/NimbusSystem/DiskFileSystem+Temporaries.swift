import Glibc
import NimbusVocabulary

extension DiskFileSystem {
    /// Removes the temporary files directly in `directory` (not below it) that `cleanup`
    /// allows; a missing directory has none. Returns how many.
    public func removeTemporaryFiles(in directory: RelativePath, _ cleanup: TemporaryCleanup) throws -> Int {
        try withRoot { root in
            let fd: FileDescriptor
            do {
                fd = try FileDescriptor.open(beneath: root, directory, [.directory, .noFollow])
            } catch let error as Errno where error == .noSuchFile {
                return 0
            } catch let error as Errno {
                throw error.at("open", directory.shown)
            }
            let stream: OpaquePointer
            do {
                stream = try Sys.openDirectoryStream(fd.rawValue)
            } catch let error as Errno {
                try? fd.close()
                throw error.at("opendir", directory.shown)
            }
            defer { try? Sys.closeDirectoryStream(stream) }
            var names: [[UInt8]] = []
            while let (name, _) = try attributing("readdir", directory.shown, { try Sys.nextDirectoryEntry(stream) }) {
                let bytes = Array(UnsafeRawBufferPointer(start: name, count: strlen(name)))
                if cleanup.accepts(bytes) { names.append(bytes) }
            }
            let folder = FileDescriptor(rawValue: Sys.descriptor(of: stream))
            var removed = 0
            for name in names where try remove(SystemPath(bytes: name), in: folder, cleanup, shown: directory,
                                                folders: true) {
                removed += 1
            }
            return removed
        }
    }

    /// Removes the temporary files that `cleanup` allows anywhere below the root, as
    /// `removeLeftoverCopies` does. Returns how many.
    public func removeTemporaryFilesEverywhere(_ cleanup: TemporaryCleanup) throws -> Int {
        try withRoot { root in
            var removed = 0
            for path in try attributing("open", ".", { try TemporarySweep(root: root).temporaryFiles() })
            where cleanup.accepts(path.name) {
                let gone = try root.withParent(of: path) { directory, name in
                    try remove(name, in: directory, cleanup, shown: path.parent)
                }
                if gone { removed += 1 }
            }
            return removed
        }
    }

    /// Removes `name` of `directory` if it is a file old enough and not open, as `cleanup`
    /// says; true when it was removed (false also when it was gone already). With `folders`
    /// (in a folder of temporaries only), a staging folder of an interrupted upload, named as
    /// a copy's temporary file, goes too, with everything in it.
    private func remove(_ name: SystemPath, in directory: FileDescriptor, _ cleanup: TemporaryCleanup,
                        shown: RelativePath, folders: Bool = false) throws -> Bool {
        let status: stat
        do {
            status = try Sys.fstatat(directory.rawValue, name, AT_SYMLINK_NOFOLLOW)
        } catch let error as Errno where error == .noSuchFile {
            return false
        }
        let isFolder = status.st_mode & S_IFMT == S_IFDIR
        guard !isFolder || (folders && TemporaryName.isCopyTemporary(name.bytes)) else { return false }
        if let limit = cleanup.changedBefore {
            let changed = WallInstant(mtime: max(status.st_mtim.nanoseconds, status.st_ctim.nanoseconds))
            guard changed < limit else { return false }
        }
        if cleanup.skipsOpenFiles && status.st_mode & S_IFMT == S_IFREG
            && (directory.isOpenElsewhere(name) ?? directory.isOpenForWriting(name)) {
            return false
        }
        do {
            if isFolder { try directory.removeTree(name) } else { try directory.removeFile(name) }
            return true
        } catch let error as Errno where error == .noSuchFile {
            return false  // Gone meanwhile.
        } catch let error as Errno {
            throw error.at(isFolder ? "remove" : "unlink", (try? shown.appending(name: name.bytes))?.shown ?? name.description)
        }
    }
}
