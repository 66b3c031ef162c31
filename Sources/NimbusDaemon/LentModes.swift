import NimbusCore
import NimbusJournal
import NimbusVocabulary

/// An entry Nimbus gave its owner's bits for its own work, and the mode it must get back: a
/// recorded folder written into (`SyncEngine+FolderModes`), a read-only file given its state
/// mark (`SyncEngine+LentFiles`). Noted durably before the bits are added, and until the mode
/// set back is durable (`RecordStore.noteLentModes`), so that after a crash the lent mode is
/// never taken for the user's: the next start sets the mode back (`restoreLentModes`).
public struct LentMode: Hashable, Sendable {
    public var side: Side
    public var path: RelativePath
    /// The entry's inode: a mode is set back on that entry only, not on another made since at its name.
    public var inode: UInt64
    /// The mode it must end with.
    public var mode: UInt32
    /// The mode Nimbus gave it: set back only while the entry still has exactly this one, so
    /// a mode someone else set meanwhile is left as they set it.
    public var working: UInt32

    public init(side: Side, path: RelativePath, inode: UInt64, mode: UInt32, working: UInt32) {
        self.side = side
        self.path = path
        self.inode = inode
        self.mode = mode
        self.working = working
    }

    var sidePath: SidePath { SidePath(side, path) }
}

/// The note's bytes: a version, then side, inode, modes and path of each entry.
enum LentModeCodec {
    static let version: UInt8 = 1

    static func encode(_ entries: [LentMode]) -> [UInt8] {
        var writer = ByteWriter()
        writer.writeUInt8(version)
        writer.writeVarint(UInt64(entries.count))
        for entry in entries {
            writer.writeUInt8(entry.side == .local ? 0 : 1)
            writer.writeUInt64(entry.inode)
            writer.writeUInt32(entry.mode)
            writer.writeUInt32(entry.working)
            writer.writeLengthPrefixed(entry.path.bytes)
        }
        return writer.bytes
    }

    struct UnknownVersion: Error, CustomStringConvertible {
        var version: UInt8
        var description: String { "unknown version \(version)" }
    }

    static func decode(_ bytes: [UInt8]) throws -> [LentMode] {
        var reader = ByteReader(bytes)
        let version = try reader.readUInt8()
        guard version == Self.version else { throw UnknownVersion(version: version) }
        let count = try reader.readVarint()
        var entries: [LentMode] = []
        for _ in 0..<min(count, UInt64(reader.remainingCount)) {
            let side: Side = try reader.readUInt8() == 0 ? .local : .cloud
            let inode = try reader.readUInt64()
            let mode = try reader.readUInt32()
            let working = try reader.readUInt32()
            let path = try RelativePath(validating: reader.readLengthPrefixed())
            entries.append(LentMode(side: side, path: path, inode: inode, mode: mode, working: working))
        }
        return entries
    }
}

/// A mode as `chmod` takes it: "0555".
func octalMode(_ mode: UInt32) -> String { "0" + String(mode, radix: 8) }
