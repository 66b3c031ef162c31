import NimbusVocabulary

extension WriteProtocol {
    /// How to write a filesystem with these capabilities (DESIGN §3). Pure, so every
    /// combination can be tested without the filesystem.
    ///
    /// - Replace: `RENAME_EXCHANGE` where it exists (the swap and the check of what was
    ///   swapped out cannot be separated); elsewhere move aside, then check what was moved.
    /// - Create: `RENAME_NOREPLACE`, else `link(2)`, else a name claimed with `O_EXCL`: in
    ///   every case two devices cannot both create the same name.
    /// - Content is verified (the base keeps every file's hash, and a file moved aside must
    ///   have it) where metadata cannot be trusted to show another device's write: on a
    ///   network or FUSE filesystem (cached attributes), where mtimes are coarser than a
    ///   millisecond (two writes of the same size in one second look alike), or where the
    ///   replace cannot be atomic.
    public static func choose(for capabilities: FilesystemCapabilities) -> WriteProtocol {
        let create: Create = capabilities.renameNoReplace ? .renameNoReplace
            : capabilities.hardLinks ? .hardLink : .exclusiveOpen
        let replace: Replace = capabilities.renameExchange ? .exchange : .moveAside
        let verifies = capabilities.isNetwork || capabilities.mtimePrecision > .milliseconds(1) || replace == .moveAside
        return WriteProtocol(replace: replace, create: create, verifiesContent: verifies)
    }
}
