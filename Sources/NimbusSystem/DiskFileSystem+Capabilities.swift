import NimbusVocabulary

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
    private func create(_ name: SystemPath) throws -> Duration {
        let file = try FileDescriptor.open(beneath: folder, RelativePath(validating: name.bytes),
                                           [.writeOnly, .create, .exclusive], permissions: 0o600)
        let asked: Int64 = 1_700_000_001_123_456_789
        try file.closeAfter { try file.setModificationTime(asked) }
        let kept = try folder.metadata(of: name).mtime
        let steps: [Duration] = [.nanoseconds(1), .microseconds(1), .milliseconds(1), .milliseconds(10), .milliseconds(100)]
        for step in steps where kept == asked - asked % step.nanosecondCount {
            return step
        }
        return .seconds(1)
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
