import NimbusCore
import NimbusJournal
import NimbusSystem
import NimbusVocabulary

/// Whether a file's content is kept locally (DESIGN §5).
public enum Residency: UInt8, Sendable, Hashable {
    /// Follows the pair's mode and the cache budget.
    case auto = 0
    /// Always kept locally, never evicted.
    case pinned = 1
    /// Freed by the user: a placeholder stays.
    case evicted = 2
}

/// Everything the journal keeps about one path.
public struct PathRecord: Hashable, Sendable {
    public var base: BaseEntry
    public var residency: Residency = .auto
    /// The last open seen, for the cache budget (`.origin`: none).
    public var lastOpened = WallInstant.origin
    /// The conflict copy made for this path, until the user resolves it.
    public var conflictCopy: RelativePath?
    /// The local side is the placeholder `NAME.nimbus`; `base.local` is the placeholder
    /// file's metadata and `base.cloud` the file it stands for.
    public var isPlaceholder = false

    public init(base: BaseEntry, residency: Residency = .auto, lastOpened: WallInstant = .origin, conflictCopy: RelativePath? = nil,
                isPlaceholder: Bool = false) {
        self.base = base
        self.residency = residency
        self.lastOpened = lastOpened
        self.conflictCopy = conflictCopy
        self.isPlaceholder = isPlaceholder
    }
}

/// The journal's value format for a `PathRecord`. Versioned so later releases can read it;
/// version 2 added the placeholder flag.
enum PathRecordCodec {
    static let version: UInt8 = 2

    static func encode(_ record: PathRecord) -> [UInt8] {
        var w = ByteWriter(reservingCapacity: 96)
        w.writeUInt8(version)
        write(record.base.local, to: &w)
        write(record.base.cloud, to: &w)
        if let hash = record.base.hash {
            w.writeUInt8(record.base.isAmbiguous ? 2 : 1)
            w.writeUInt64(hash.value)
        } else {
            w.writeUInt8(0)
        }
        w.writeUInt8(record.residency.rawValue)
        w.writeInt64(record.lastOpened.nanoseconds)  // on disk: ns since the epoch
        if let copy = record.conflictCopy {
            w.writeUInt8(1)
            w.writeLengthPrefixed(copy.bytes)
        } else {
            w.writeUInt8(0)
        }
        w.writeUInt8(record.isPlaceholder ? 1 : 0)
        return w.bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> PathRecord {
        var r = ByteReader(bytes)
        let recordVersion = try r.readUInt8()
        guard recordVersion == 1 || recordVersion == version else { throw CorruptRecord() }
        let local = try readMetadata(&r)
        let cloud = try readMetadata(&r)
        let hashFlag = try r.readUInt8()
        let hash = hashFlag != 0 ? ContentHash(value: try r.readUInt64(), size: local.size) : nil
        guard let residency = Residency(rawValue: try r.readUInt8()) else { throw CorruptRecord() }
        let lastOpened = WallInstant(nanoseconds: try r.readInt64())
        let copy = try r.readUInt8() == 1 ? try RelativePath(validating: try r.readLengthPrefixed()) : nil
        let isPlaceholder = recordVersion >= 2 ? try r.readUInt8() == 1 : false
        return PathRecord(base: BaseEntry(local: local, cloud: cloud, hash: hash, isAmbiguous: hashFlag == 2), residency: residency,
                          lastOpened: lastOpened, conflictCopy: copy, isPlaceholder: isPlaceholder)
    }

    static func write(_ m: FileMetadata, to w: inout ByteWriter) {
        w.writeUInt8(m.kind.rawValue)
        w.writeVarint(UInt64(max(0, m.size)))
        w.writeInt64(m.mtime)
        w.writeVarint(UInt64(m.mode))
        w.writeVarint(m.inode)
        w.writeVarint(m.device)
        w.writeLengthPrefixed(m.symlinkTarget ?? [])
    }

    static func readMetadata(_ r: inout ByteReader) throws -> FileMetadata {
        guard let kind = FileKind(rawValue: try r.readUInt8()) else { throw CorruptRecord() }
        let size = Int64(try r.readVarint())
        let mtime = try r.readInt64()
        let mode = UInt32(truncatingIfNeeded: try r.readVarint())
        let inode = try r.readVarint()
        let device = try r.readVarint()
        let target = try r.readLengthPrefixed()
        return FileMetadata(kind: kind, size: size, mtime: mtime, mode: mode, inode: inode, device: device,
                            symlinkTarget: kind == .symlink ? target : nil)
    }
}

/// A journal value that decodes but makes no sense; the path is rescanned instead.
struct CorruptRecord: Error {}
