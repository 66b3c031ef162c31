import NimbusVocabulary

// Extended attributes live on the inode, so they follow renames and vanish with the file.
// Only the "user." namespace is Nimbus's (EOPNOTSUPP for any other, checked first). Linux
// keeps user attributes on regular files and directories only: on a symlink reading finds
// none and writing fails (EOPNOTSUPP, as DiskFileSystem reports it). Removing an absent
// attribute succeeds, so a retried removal does too.
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
        modify(number) { $0.extendedAttributes[name] = value }
    }

    mutating func removeExtendedAttribute(_ name: String, of path: RelativePath) throws {
        try checkNamespace(name, "removexattr", path)
        let number = try existing(path, "removexattr")
        guard inode(number).extendedAttributes[name] != nil else { return }
        modify(number) { $0.extendedAttributes[name] = nil }
    }

    private func checkNamespace(_ name: String, _ operation: String, _ path: RelativePath) throws {
        guard name.hasPrefix("user.") else { throw Errno.notSupported.at(operation, path) }
    }
}
