import Glibc

/// Which leftover temporary files a sweep may remove (DESIGN §3: a crash or a failed copy
/// leaves them; a running daemon sweeps them too, not only its start).
public struct TemporaryCleanup: Sendable, Hashable {
    /// Only a copy's temporary file, recognised by its exact name (`TemporaryName.isCopyTemporary`),
    /// rather than any `.nimbus-tmp-` name (an application's coordinated write is one too).
    public var copiesOnly: Bool
    /// Only files whose last change (the later of mtime and ctime, wall-clock ns) is before
    /// this; nil: whatever their age. A copy sets its temporary's mtime to the source's, so
    /// the ctime, moved by that very change, tells when the file was last written.
    public var changedBefore: Int64?
    /// Leave a file that some program has open (a write lease is refused, or where leases
    /// cannot be asked, `/proc/*/fd` shows a writer).
    public var skipsOpenFiles: Bool

    public init(copiesOnly: Bool, changedBefore: Int64?, skipsOpenFiles: Bool) {
        self.copiesOnly = copiesOnly
        self.changedBefore = changedBefore
        self.skipsOpenFiles = skipsOpenFiles
    }

    /// Every temporary file, whatever its age (at start: nothing of this daemon is in flight).
    public static let all = TemporaryCleanup(copiesOnly: false, changedBefore: nil, skipsOpenFiles: false)

    func accepts(_ name: [UInt8]) -> Bool {
        copiesOnly ? TemporaryName.isCopyTemporary(name) : TemporaryName.isTemporary(name)
    }
}

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
            for name in names where try remove(SystemPath(bytes: name), in: folder, cleanup, shown: directory) {
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
    /// says; true when it was removed (false also when it was gone already).
    private func remove(_ name: SystemPath, in directory: FileDescriptor, _ cleanup: TemporaryCleanup,
                        shown: RelativePath) throws -> Bool {
        let status: stat
        do {
            status = try Sys.fstatat(directory.rawValue, name, AT_SYMLINK_NOFOLLOW)
        } catch let error as Errno where error == .noSuchFile {
            return false
        }
        guard status.st_mode & S_IFMT != S_IFDIR else { return false }
        if let limit = cleanup.changedBefore {
            let changed = max(Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec),
                              Int64(status.st_ctim.tv_sec) * 1_000_000_000 + Int64(status.st_ctim.tv_nsec))
            guard changed < limit else { return false }
        }
        if cleanup.skipsOpenFiles && status.st_mode & S_IFMT == S_IFREG
            && (directory.isOpenElsewhere(name) ?? directory.isOpenForWriting(name)) {
            return false
        }
        do {
            try directory.removeFile(name)
            return true
        } catch let error as Errno where error == .noSuchFile {
            return false  // Gone meanwhile.
        } catch let error as Errno {
            throw error.at("unlink", (try? shown.appending(name: name.bytes))?.shown ?? name.description)
        }
    }
}
