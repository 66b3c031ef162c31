import Glibc
import NimbusVocabulary

/// Nobody reads zeros (DESIGN §5): without a listening daemon a not-downloaded file would
/// read as zeros (its holes). While no daemon listens (clean stop, before the first start) its
/// permission bits are all cleared, and the real mode is kept in `modeAttribute` (and in the
/// journal); at start the marks go on before the permissions come back.
///
/// What remains: root (and any process with `CAP_DAC_OVERRIDE` / `CAP_DAC_READ_SEARCH`)
/// reads through mode 000; a crash or `kill -9` leaves the files unguarded (marks die with the
/// group, the permissions were never taken away); the owner can chmod the file back itself.
extension RealNamePlaceholderFile {
    public static let modeAttribute = "user.nimbus.mode"

    /// Takes every permission away from the not-downloaded `path`, keeping its mode in
    /// `modeAttribute` first (in octal, as `stat` shows it). Returns the mode it had.
    @discardableResult
    public static func guardReading(beneath root: FileDescriptor, _ path: RelativePath) throws -> UInt32 {
        let file = try attributing("open", path.shown) { try FileDescriptor.open(beneath: root, path, [.pathOnly, .noFollow]) }
        return try file.closeAfter {
            let mode = try attributing("fstat", path.shown) { try file.metadata().mode }
            guard mode != 0 else { return 0 }  // guarded already: the attribute keeps the real mode
            try root.withParent(of: path) { directory, name in
                try attributing("setxattr", path.shown) {
                    do {
                        try directory.setExtendedAttribute(modeAttribute, of: name, to: Array(String(mode, radix: 8).utf8))
                    } catch let error as Errno where error == .permissionDenied {
                        // user.* attributes need write permission, even for the owner.
                        try directory.setPermissions(of: name, mode | 0o200)
                        try directory.setExtendedAttribute(modeAttribute, of: name, to: Array(String(mode, radix: 8).utf8))
                    }
                }
                try attributing("chmod", path.shown) { try directory.setPermissions(of: name, 0) }
            }
            return mode
        }
    }

    /// Marks the guarded not-downloaded files `names` of `directory` (beneath `root`) in
    /// `group`, then gives each its `mode` back. Marking needs read permission, so each file
    /// is readable (and writable) by its owner for a moment before its mark: for that moment the directory
    /// itself is marked for its files' opens, so an open then is an event as well.
    public static func restoreReading(beneath root: FileDescriptor, in directory: RelativePath,
                                      _ files: [(name: [UInt8], mode: UInt32)], group: FanotifyGroup) throws {
        guard !files.isEmpty else { return }
        let folder = try attributing("open", directory.shown) {
            try FileDescriptor.open(beneath: root, directory, [.directory, .noFollow])
        }
        try folder.closeAfter {
            let cover: FanotifyEvents = [.openPermission, .openExecPermission, .onChild]
            try attributing("fanotify_mark", directory.shown) { try group.mark(".", in: folder, for: cover) }
            defer { try? group.unmark(".", in: folder, for: cover) }
            for file in files {
                let name = SystemPath(bytes: file.name)
                let path = try directory.appending(name: file.name)
                try attributing("chmod", path.shown) { try folder.setPermissions(of: name, 0o600) }
                try attributing("fanotify_mark", path.shown) { try group.mark(name, in: folder) }
                try? folder.removeExtendedAttribute(modeAttribute, of: name)
                try attributing("chmod", path.shown) { try folder.setPermissions(of: name, file.mode) }
            }
        }
    }
}
