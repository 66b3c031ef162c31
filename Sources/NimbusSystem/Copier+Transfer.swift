import Glibc

/// Moves the bytes of one file into another, the fastest way the two filesystems allow:
///
/// 1. `FICLONE`: the destination shares the source's blocks (Btrfs, XFS, bcachefs): instant,
///    no space used. Other filesystems refuse it (`EOPNOTSUPP`, `EXDEV`, `EINVAL`, `ENOTTY`).
/// 2. `copy_file_range`: the kernel copies without a trip through user space, and NFS and SMB
///    copy on the server. Refused across some filesystems or by old kernels (`EXDEV`,
///    `ENOSYS`, `EINVAL`, `EOPNOTSUPP`).
/// 3. `pread` / `pwrite` through a 1 MiB buffer, which works everywhere.
///
/// A refusal moves on to the next way from the same offset; any other error is thrown with
/// the file it concerns.
struct ContentTransfer {
    let input: FileDescriptor
    let output: FileDescriptor
    let source: RelativePath
    let temporary: RelativePath

    /// Bytes handed to the kernel per call: large enough to cost nothing, small enough for
    /// progress to move on a big file.
    static let chunkSize = 8 << 20
    static let bufferSize = 1 << 20

    private static let cloneRefusals: Set<Errno> = [.notSupported, .crossDevice, .invalidArgument,
                                                    .inappropriateIoctl, .notImplemented]
    private static let rangeRefusals: Set<Errno> = [.crossDevice, .notImplemented, .invalidArgument, .notSupported]

    /// Copies `size` bytes, or fewer when the source ends early (it shrank: the caller's check
    /// sees it), reporting the running total to `progress`. Returns the count copied.
    func run(size: Int64, progress: (Int64) -> Void) throws -> Int64 {
        guard size > 0 else { return 0 }
        // Advice only: a filesystem that ignores it loses nothing.
        try? Sys.fadvise(input.rawValue, POSIX_FADV_SEQUENTIAL)
        if let cloned = try clone() {
            progress(cloned)
            return cloned
        }
        var offset: Int64 = 0
        var useRange = true
        var buffer: UnsafeMutableRawBufferPointer?
        defer { buffer?.deallocate() }
        while offset < size {
            let wanted = Int(min(size - offset, Int64(Self.chunkSize)))
            let copied: Int
            if useRange, let count = try copyRange(at: offset, count: wanted), count > 0 {
                copied = count
            } else {
                // Refused, or 0, which some filesystems answer before the end: only read(2) is
                // trusted to say where the file ends.
                useRange = false
                let chunk = buffer ?? .allocate(byteCount: Self.bufferSize, alignment: 4096)
                buffer = chunk
                copied = try readWrite(at: offset, count: min(wanted, chunk.count), buffer: chunk)
                if copied == 0 { break }
            }
            offset += Int64(copied)
            progress(offset)
        }
        return offset
    }

    /// The whole file, or nil when this filesystem pair cannot clone.
    private func clone() throws -> Int64? {
        do {
            try Sys.ficlone(output.rawValue, input.rawValue)
        } catch let error as Errno where Self.cloneRefusals.contains(error) {
            return nil
        } catch let error as Errno {
            throw error.at("clone", temporary.shown)
        }
        // The clone takes the source as it is now, which the caller compares with what it expected.
        return try attributing("fstat", temporary.shown) { try output.metadata().size }
    }

    /// Bytes copied in kernel, or nil when copy_file_range is refused here.
    private func copyRange(at offset: Int64, count: Int) throws -> Int? {
        var inputOffset = offset, outputOffset = offset
        do {
            return try Sys.copyFileRange(input.rawValue, &inputOffset, output.rawValue, &outputOffset, count)
        } catch let error as Errno where Self.rangeRefusals.contains(error) {
            return nil
        } catch let error as Errno {
            throw error.at("copy_file_range", temporary.shown)
        }
    }

    /// One read and the writes it takes; 0 at the end of the source.
    private func readWrite(at offset: Int64, count: Int, buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[..<count])
        let read = try attributing("read", source.shown) { try input.read(fromAbsoluteOffset: offset, into: slice) }
        try attributing("write", temporary.shown) {
            try output.writeAll(toAbsoluteOffset: offset, UnsafeRawBufferPointer(rebasing: slice[..<read]))
        }
        return read
    }
}
