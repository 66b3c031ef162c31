import Glibc
import NimbusVocabulary

// Walking a subtree to give every directory in it a watch.

extension WatchedTree {
    /// Which entries a walk reports as `created`.
    enum Reporting {
        /// None: the initial walk and the one after an overflow (the caller rescans anyway).
        case nothing
        /// All of them: the directory is new to the caller, and entries made in it before its
        /// watch existed produced no event (`mkdir -p a/b && echo x > a/b/f` beats any watcher).
        case everything
        /// Only those in directories that had no watch yet (after a rename inside the tree).
        case newlyWatched
    }

    /// Watches `top` and every directory below it that is not excluded, reporting entries as
    /// `created` per `reporting`. Each directory is watched before it is listed, so an entry
    /// made meanwhile is reported by the kernel, by the listing, or by both; never by neither.
    /// Directories that vanish or cannot be read are skipped (their parent reports the
    /// change; the scan reports the problem). Returns the watches of the walked directories.
    @discardableResult
    mutating func watchSubtree(_ top: RelativePath, reporting: Reporting,
                               into events: inout [WatchEvent]) throws -> [Inotify.Watch] {
        guard let rootDirectory = try openRoot() else { return [] }
        defer { try? rootDirectory.close() }
        var walked: [Inotify.Watch] = []
        var pending = [top]
        while let directory = pending.popLast() {
            guard let (watch, entries) = try watchDirectory(directory, in: rootDirectory) else { continue }
            let isNew = directories.updateValue(directory, forKey: watch) == nil
            walked.append(watch)
            let reports = reporting == .everything || (reporting == .newlyWatched && isNew)
            for entry in entries {
                let path = try directory.appending(name: entry.name)
                if entry.isDirectory && options.exclude(path) { continue }
                if reports { events.append(WatchEvent(.created, path, isDirectory: entry.isDirectory)) }
                if entry.isDirectory { pending.append(path) }
            }
        }
        return walked
    }

    /// Adds a watch for `directory` and lists it, or returns nil when it is gone, unreadable,
    /// or out of watches (then it is recorded in `unwatched`).
    private mutating func watchDirectory(_ directory: RelativePath, in rootDirectory: FileDescriptor)
        throws -> (Inotify.Watch, [(name: [UInt8], isDirectory: Bool)])? {
        let opened: FileDescriptor
        do {
            opened = try FileDescriptor.open(beneath: rootDirectory, directory, .directory)
        } catch let errno as Errno where errno.meansSkipDirectory {
            return nil
        }
        let stream: OpaquePointer
        do {
            stream = try Sys.openDirectoryStream(opened.rawValue)
        } catch {
            try? opened.close()
            throw error
        }
        defer { try? Sys.closeDirectoryStream(stream) }
        let watch: Inotify.Watch
        do {
            watch = try Self.addWatch(inotify, for: opened, mask: mask)
        } catch let errno as Errno where errno == .noSpace {
            unwatched.append(directory)
            return nil
        } catch let errno as Errno where errno.meansSkipDirectory {
            return nil
        }
        do {
            return (watch, try Self.entries(of: stream, in: opened))
        } catch let errno as Errno where errno.meansSkipDirectory {
            return (watch, [])  // watched but unreadable: its events still come
        }
    }

    /// The root, open, or nil when its path no longer names it (it was deleted or moved, and
    /// `rootRemoved` is on its way).
    private func openRoot() throws -> FileDescriptor? {
        let opened: FileDescriptor
        do {
            opened = try FileDescriptor.open(root, .directory)
        } catch let errno as Errno where errno.meansSkipDirectory {
            return nil
        }
        do {
            let metadata = try opened.metadata()
            if metadata.device == rootIdentity.device && metadata.inode == rootIdentity.inode { return opened }
        } catch {
            try? opened.close()
            throw error
        }
        try? opened.close()
        return nil
    }

    /// Watches the directory open as `directory` through its /proc/self/fd link, so that the
    /// watch lands on exactly the directory the walk opened and listed (a path could have
    /// been replaced by a symlink or another directory in between).
    static func addWatch(_ inotify: Inotify, for directory: FileDescriptor,
                         mask: Inotify.Mask) throws -> Inotify.Watch {
        try inotify.addWatch(SystemPath("/proc/self/fd/\(directory.rawValue)"), for: mask)
    }

    /// The entries of a directory stream except ".", ".." and Nimbus's temporary files.
    private static func entries(of stream: OpaquePointer,
                                in directory: FileDescriptor) throws -> [(name: [UInt8], isDirectory: Bool)] {
        let dot = UInt8(ascii: ".")
        var entries: [(name: [UInt8], isDirectory: Bool)] = []
        while let entry = try Sys.readDirectoryEntry(stream) {
            if entry.name == [dot] || entry.name == [dot, dot] || TemporaryName.isTemporary(entry.name) { continue }
            let isDirectory = switch Int(entry.type) {
            case DT_DIR: true
            // Some filesystems leave the type out of directory entries; ask lstat.
            case DT_UNKNOWN: (try? directory.metadata(of: SystemPath(bytes: entry.name)))?.kind == .directory
            default: false
            }
            entries.append((entry.name, isDirectory))
        }
        return entries
    }
}

extension Errno {
    /// Errors that concern one directory of a walk, not the watcher: it vanished, became
    /// something else, or cannot be read, or its path is too long to open (past PATH_MAX: the
    /// scan cannot read it either, and says so).
    fileprivate var meansSkipDirectory: Bool {
        [.noSuchFile, .notDirectory, .tooManySymlinks, .permissionDenied, .notPermitted, .staleHandle, .ioError, .nameTooLong]
            .contains(self)
    }
}
