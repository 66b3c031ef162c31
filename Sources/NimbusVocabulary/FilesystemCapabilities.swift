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
    /// The smallest mtime step kept (1 ns on ext4, 1 s on sshfs).
    public var mtimePrecision: Duration
    /// A network or FUSE filesystem: other machines write it, and the kernel or the client
    /// caches what it says about files (attributes, directory listings).
    public var isNetwork: Bool

    public init(type: String, renameNoReplace: Bool, renameExchange: Bool, hardLinks: Bool,
                extendedAttributes: Bool, mtimePrecision: Duration, isNetwork: Bool) {
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
        extendedAttributes: true, mtimePrecision: .nanoseconds(1), isNetwork: false)

    public var description: String {
        func yes(_ flag: Bool) -> String { flag ? "yes" : "no" }
        return "\(type)\(isNetwork ? " (network)" : ""): rename-noreplace \(yes(renameNoReplace)), "
            + "rename-exchange \(yes(renameExchange)), hard links \(yes(hardLinks)), "
            + "xattrs \(yes(extendedAttributes)), mtime precision \(Self.describe(precision: mtimePrecision))"
    }

    /// "1 ns", "10 ms", "1 s": in the largest unit it reaches, truncated.
    package static func describe(precision: Duration) -> String {
        let units: [(String, Duration)] = [("s", .seconds(1)), ("ms", .milliseconds(1)), ("µs", .microseconds(1))]
        for (name, unit) in units where precision >= unit {
            return "\(precision.nanosecondCount / unit.nanosecondCount) \(name)"
        }
        return "\(precision.nanosecondCount) ns"
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
