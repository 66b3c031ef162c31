import NimbusVocabulary

// Extended attributes live on the inode, so they follow renames and vanish with the file.
// Only the "user." namespace is Nimbus's (EOPNOTSUPP for any other, checked first). Linux
// keeps user attributes on regular files and directories only: on a symlink reading finds
// none and writing fails (EOPNOTSUPP, as DiskFileSystem reports it). Removing an absent
// attribute succeeds, so a retried removal does too. Writing needs the owner's write bit when
// write permission is checked, as for an unprivileged process.
extension MemoryTree {
    func extendedAttribute(_ name: String, of path: RelativePath) throws -> [UInt8]? {
        try checkNamespace(name, "getxattr", path)
        let number = try existing(path, "getxattr")
        return inode(number).extendedAttributes[name]
    }

    mutating func setExtendedAttribute(_ name: String, of path: RelativePath, to value: [UInt8]) throws {
        try checkNamespace(name, "setxattr", path)
        let number = try existing(path, "setxattr")
        if inode(number).kind == .symlink { throw Errno.notSupported.at("setxattr", path) }
        try checkAttributesWritable(number, "setxattr", path)
        modify(number) { $0.extendedAttributes[name] = value }
    }

    mutating func removeExtendedAttribute(_ name: String, of path: RelativePath) throws {
        try checkNamespace(name, "removexattr", path)
        let number = try existing(path, "removexattr")
        guard inode(number).extendedAttributes[name] != nil else { return }
        try checkAttributesWritable(number, "removexattr", path)
        modify(number) { $0.extendedAttributes[name] = nil }
    }

    /// A process without CAP_FOWNER writes the user xattrs of an inode it may write only
    /// (EACCES otherwise), when write permission is checked (`checksWritePermission`).
    private func checkAttributesWritable(_ number: UInt64, _ operation: String, _ path: RelativePath) throws {
        guard checksWritePermission, inode(number).mode & 0o200 == 0 else { return }
        throw Errno.permissionDenied.at(operation, path)
    }

    private func checkNamespace(_ name: String, _ operation: String, _ path: RelativePath) throws {
        guard name.hasPrefix("user.") else { throw Errno.notSupported.at(operation, path) }
    }
}
