import Glibc

/// What a filesystem supports for safe writes, found by trying each operation on scratch files
/// (DESIGN §3): network filesystems (NFS, SMB, sshfs and other FUSE mounts, rclone) refuse some
/// of them, and how the cloud may be written depends on which.
public struct FilesystemCapabilities: Hashable, Sendable, CustomStringConvertible {
    /// The filesystem's type as `statfs` names it ("ext4", "nfs", "fuse", …).
    public var type: String
    /// `renameat2(RENAME_NOREPLACE)`: a create that can never replace someone else's file.
    public var renameNoReplace: Bool
    /// `renameat2(RENAME_EXCHANGE)`: an atomic swap, so a replaced file can be checked after the fact.
    public var renameExchange: Bool
    /// `link(2)`: an exclusive create where `RENAME_NOREPLACE` is refused.
    public var hardLinks: Bool
    /// `user.*` extended attributes.
    public var extendedAttributes: Bool
    /// The smallest mtime step kept, in nanoseconds (1 on ext4, 1 000 000 000 on sshfs).
    public var mtimePrecision: Int64
    /// A network or FUSE filesystem: other machines write it, and the kernel or the client
    /// caches what it says about files (attributes, directory listings).
    public var isNetwork: Bool

    public init(type: String, renameNoReplace: Bool, renameExchange: Bool, hardLinks: Bool,
                extendedAttributes: Bool, mtimePrecision: Int64, isNetwork: Bool) {
        self.type = type
        self.renameNoReplace = renameNoReplace
        self.renameExchange = renameExchange
        self.hardLinks = hardLinks
        self.extendedAttributes = extendedAttributes
        self.mtimePrecision = mtimePrecision
        self.isNetwork = isNetwork
    }

    /// A local disk that supports everything (the in-memory filesystem of the tests says this).
    public static let complete = FilesystemCapabilities(
        type: "local", renameNoReplace: true, renameExchange: true, hardLinks: true,
        extendedAttributes: true, mtimePrecision: 1, isNetwork: false)

    public var description: String {
        func yes(_ flag: Bool) -> String { flag ? "yes" : "no" }
        return "\(type)\(isNetwork ? " (network)" : ""): rename-noreplace \(yes(renameNoReplace)), "
            + "rename-exchange \(yes(renameExchange)), hard links \(yes(hardLinks)), "
            + "xattrs \(yes(extendedAttributes)), mtime precision \(Self.describe(precision: mtimePrecision))"
    }

    static func describe(precision: Int64) -> String {
        switch precision {
        case ..<1_000: "\(precision) ns"
        case ..<1_000_000: "\(precision / 1_000) µs"
        case ..<1_000_000_000: "\(precision / 1_000_000) ms"
        default: "\(precision / 1_000_000_000) s"
        }
    }
}

/// How files are put in place on one filesystem, chosen from its capabilities by the core
/// (`WriteProtocol.choose`); the installer follows it.
public struct WriteProtocol: Hashable, Sendable, CustomStringConvertible {
    public enum Replace: String, Hashable, Sendable {
        /// Swap in the new file with `RENAME_EXCHANGE`, check the file swapped out, swap back if
        /// it is not the expected one: the check and the swap cannot be separated.
        case exchange
        /// Move the old file aside (a rename into the versions store or a temporary name), check
        /// what was moved (metadata read after the rename, and the content hash where one is
        /// known), put it back exclusively if it is not the expected one.
        case moveAside = "move-aside"
    }

    public enum Create: String, Hashable, Sendable {
        /// `renameat2(RENAME_NOREPLACE)`.
        case renameNoReplace = "rename-noreplace"
        /// `link(2)` of the temporary file to the name, then `unlink` of the temporary.
        case hardLink = "link"
        /// The name claimed with `open(O_CREAT|O_EXCL)`, then the temporary renamed over the claim.
        case exclusiveOpen = "open-exclusive"
    }

    public var replace: Replace
    public var create: Create
    /// Keep the content hash of every synced file in the base and compare it with what was
    /// moved aside: metadata alone cannot be trusted here (coarse mtimes, cached attributes).
    public var verifiesContent: Bool

    public init(replace: Replace, create: Create, verifiesContent: Bool) {
        self.replace = replace
        self.create = create
        self.verifiesContent = verifiesContent
    }

    /// What a local disk uses.
    public static let local = WriteProtocol(replace: .exchange, create: .renameNoReplace, verifiesContent: false)

    public var description: String {
        "replace by \(replace.rawValue), create by \(create.rawValue)\(verifiesContent ? ", content verified" : "")"
    }
}

extension DiskFileSystem {
    /// Tries each capability on scratch files in `directory` (created if missing; `.nimbus/tmp`
    /// of the cloud), which are removed afterwards. A refusal (`EINVAL`, `EPERM`, `ENOTSUP`,
    /// `ENOSYS`) means "not supported"; any other error is thrown.
    public func probeCapabilities(in directory: RelativePath) throws -> FilesystemCapabilities {
        try withRoot { root in
            try attributing("mkdir", directory.shown) { try root.makeDirectories(directory) }
            return try attributing("probe", directory.shown) {
                let folder = try FileDescriptor.open(beneath: root, directory, [.directory])
                return try folder.closeAfter { try CapabilityProbe(folder: folder).run() }
            }
        }
    }
}

/// The scratch files of one probe: `.nimbus-tmp-` names, so a crash leaves only files the
/// temporary sweep removes.
private struct CapabilityProbe {
    let folder: FileDescriptor
    static let refusals: Set<Errno> = [.invalidArgument, .notPermitted, .notSupported, .notImplemented]

    func run() throws -> FilesystemCapabilities {
        let a = SystemPath(bytes: TemporaryFile.randomName()), b = SystemPath(bytes: TemporaryFile.randomName())
        let c = SystemPath(bytes: TemporaryFile.randomName())
        defer { for name in [a, b, c] { try? folder.removeFile(name) } }
        let precision = try create(a)
        _ = try create(b)
        let noReplace = try refusedAsFalse { try folder.rename(a, to: c, mode: .noReplace) }
        if noReplace { try folder.rename(c, to: a) }
        let exchange = try refusedAsFalse { try folder.rename(a, to: b, mode: .exchange) }
        // rclone's mount answers EIO for both: as good as a refusal.
        let links = try refusedAsFalse(alsoRefusing: .ioError) { try Sys.linkat(folder.rawValue, a, folder.rawValue, c) }
        let xattrs = try refusedAsFalse(alsoRefusing: .ioError) {
            try folder.setExtendedAttribute("user.nimbus.probe", of: a, to: [1])
        }
        let type = try Sys.filesystemType(folder.rawValue)
        return FilesystemCapabilities(type: Self.typeName(type), renameNoReplace: noReplace, renameExchange: exchange,
                                      hardLinks: links, extendedAttributes: xattrs, mtimePrecision: precision,
                                      isNetwork: Self.networkTypes.contains(type))
    }

    /// Creates `name` with an mtime of …:01.123456789 and reads back what was kept: the
    /// smallest step that explains it.
    private func create(_ name: SystemPath) throws -> Int64 {
        let file = try FileDescriptor.open(beneath: folder, RelativePath(validating: name.bytes),
                                           [.writeOnly, .create, .exclusive], permissions: 0o600)
        let asked: Int64 = 1_700_000_001_123_456_789
        try file.closeAfter { try file.setModificationTime(asked) }
        let kept = try folder.metadata(of: name).mtime
        for step in [1, 1_000, 1_000_000, 10_000_000, 100_000_000] as [Int64] where kept == asked - asked % step {
            return step
        }
        return 1_000_000_000
    }

    private func refusedAsFalse(alsoRefusing other: Errno? = nil, _ body: () throws -> Void) throws -> Bool {
        do {
            try body()
            return true
        } catch let error as Errno where Self.refusals.contains(error) || error == other {
            return false
        }
    }

    /// statfs magic numbers of filesystems other machines may write, whose clients cache.
    static let networkTypes: Set<Int64> = [0x6969, 0x6573_5546 /* fuse, fuseblk */, 0xFF53_4D42 /* cifs */, 0xFE53_4D42 /* smb2 */,
                                           0x517B /* smb */, 0x0102_1997 /* v9fs */, 0x00C3_6400 /* ceph */,
                                           0x5346_414F /* afs */]

    static func typeName(_ magic: Int64) -> String {
        switch magic {
        case 0xEF53: "ext4"
        case 0x0102_1994: "tmpfs"
        case 0x9123_683E: "btrfs"
        case 0x5846_5342: "xfs"
        case 0x6969: "nfs"
        case 0x6573_5546: "fuse"
        case 0xFF53_4D42, 0xFE53_4D42, 0x517B: "smb"
        case 0x0102_1997: "9p"
        case 0x00C3_6400: "ceph"
        case 0x794C_7630: "overlay"
        case 0xCA45_1A4E: "bcachefs"
        case 0x2FC1_2FC1: "zfs"
        default: "0x" + String(magic, radix: 16)
        }
    }
}
