import CNimbus
import Glibc
import NimbusVocabulary

/// A fill interrupted by `kill -9` (or a crash of the daemon alone) leaves a not-downloaded file
/// that holds part of the cloud's content: the writes moved its mtime, so at the next start it
/// looks like a local edit, and would be uploaded over the whole cloud copy. What tells it
/// apart from an edit is its content: every byte it holds is the cloud file's byte at the same
/// offset, the rest still holes, and `user.nimbus.state` still says `notDownloaded` (a fill
/// sets `downloaded` only once complete and durable).
extension RealNamePlaceholderFile {
    /// When `path` beneath `root` is such an interrupted fill of `cloud` (the cloud file, open;
    /// it must still be `expected`), punches its content out again and gives it back
    /// `recorded.mtime`: a whole not-downloaded file, as the journal has it. Returns its
    /// metadata then; nil (nothing touched) when it is anything else: an edit, another file,
    /// a cloud file that changed since.
    public static func undoInterruptedFill(beneath root: FileDescriptor, _ path: RelativePath, recorded: FileMetadata,
                                           cloud: FileDescriptor, expected: FileMetadata, stateAttribute: String) throws -> FileMetadata? {
        let cloudNow = FileMetadata(try attributing("fstat", path.shown) { try Sys.fstat(cloud.rawValue) })
        guard cloudNow.size == expected.size, cloudNow.mtime == expected.mtime, expected.size == recorded.size else { return nil }
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(beneath: root, path, [.readWrite, .noFollow, .nonBlocking])
        } catch let error as Errno where error == .permissionDenied || error == .tooManySymlinks {
            return nil  // read-only to us, or not a file: not ours to repair
        }
        return try file.closeAfter {
            let now = try attributing("fstat", path.shown) { try file.metadata() }
            guard now.kind == .file, now.inode == recorded.inode, now.size == recorded.size, now.mode == recorded.mode,
                  try isNotDownloaded(file, stateAttribute: stateAttribute, path: path),
                  try holdsOnly(cloud, in: file, size: now.size, path: path) else { return nil }
            try attributing("punch", path.shown) {
                if now.size > 0 { try Sys.punchHole(file.rawValue, 0, now.size) }
                try file.setModificationTime(recorded.mtime)
                try file.sync()
            }
            return try file.metadata()
        }
    }

    static func isNotDownloaded(_ file: FileDescriptor, stateAttribute: String, path: RelativePath) throws -> Bool {
        var value = [UInt8](repeating: 0, count: 64)
        do {
            let count = try value.withUnsafeMutableBytes { try Sys.fgetxattr(file.rawValue, stateAttribute, into: $0) }
            return value[..<count].elementsEqual("notDownloaded".utf8)
        } catch let error as Errno where error == .noData || error == .resultTooLarge {
            return false
        }
    }

    /// Whether every data range of `file` (up to `size`) holds the bytes of `cloud` at the same
    /// offsets, but for zeros after the last byte written: a write cut short leaves the rest of
    /// its last block zero (less than one block, `st_blksize`, and nothing after it).
    static func holdsOnly(_ cloud: FileDescriptor, in file: FileDescriptor, size: Int64, path: RelativePath) throws -> Bool {
        let chunk = 1 << 20
        let block = Int64(try attributing("fstat", path.shown) { try Sys.fstat(file.rawValue).st_blksize })
        var mine = [UInt8](repeating: 0, count: chunk), theirs = [UInt8](repeating: 0, count: chunk)
        var offset: Int64 = 0, dataEnd: Int64 = 0
        var zerosFrom: Int64?  // where the written bytes stopped, if they did inside the data
        scan: while offset < size {
            let data: Int64
            do {
                data = try Sys.lseek(file.rawValue, offset, CNIMBUS_SEEK_DATA)
            } catch let error as Errno where error == .noDeviceOrAddress {
                break scan  // holes to the end
            } catch let error as Errno {
                throw error.at("lseek", path.shown)
            }
            guard data < size else { break scan }
            let end = min(try attributing("lseek", path.shown) { try Sys.lseek(file.rawValue, data, CNIMBUS_SEEK_HOLE) }, size)
            var position = data
            while position < end {
                let want = Int(min(Int64(chunk), end - position))
                let got = try mine.withUnsafeMutableBytes {
                    try file.read(fromAbsoluteOffset: position, into: UnsafeMutableRawBufferPointer(rebasing: $0[..<want]))
                }
                let gotCloud = try theirs.withUnsafeMutableBytes {
                    try cloud.read(fromAbsoluteOffset: position, into: UnsafeMutableRawBufferPointer(rebasing: $0[..<want]))
                }
                guard got == want, gotCloud == want else { return false }
                var from = 0
                if zerosFrom == nil, let first = (0..<want).first(where: { mine[$0] != theirs[$0] }) {
                    zerosFrom = position + Int64(first)
                    from = first
                }
                if zerosFrom != nil, mine[from..<want].contains(where: { $0 != 0 }) { return false }
                position += Int64(want)
            }
            dataEnd = end
            offset = end
        }
        guard let zerosFrom else { return true }
        return dataEnd - zerosFrom < block
    }
}
