import CNimbus
import Glibc
import NimbusVocabulary
import Synchronization

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
/// the file it concerns. A filesystem that cannot clone is not asked again for the other
/// files of the run (`CloneRefusals`): on ext4 every file would cost a failed ioctl.
///
/// A sparse source (fewer blocks than its size needs) is copied sparse where cloning is not
/// possible: only its data ranges (`SEEK_DATA` / `SEEK_HOLE`) are written, the holes are left
/// unwritten and the size set at the end, so a 2 GiB file holding 4 KiB of data stays small
/// on a target that keeps holes (and reads the same, zeros, on one that does not).
struct ContentTransfer {
    let input: FileDescriptor
    let output: FileDescriptor
    let source: RelativePath
    let temporary: RelativePath
    /// The output's filesystem (`st_dev`), when known, so that a refused clone is remembered.
    var destinationDevice: UInt64? = nil

    /// Bytes handed to the kernel per call: large enough to cost nothing, small enough for
    /// progress to move on a big file.
    static let chunkSize = 8 << 20
    static let bufferSize = 1 << 20

    private static let cloneRefusals: Set<Errno> = [.notSupported, .crossDevice, .invalidArgument,
                                                    .inappropriateIoctl, .notImplemented]
    private static let rangeRefusals: Set<Errno> = [.crossDevice, .notImplemented, .invalidArgument, .notSupported]

    /// Below this size the kernel's default read-ahead takes the whole file in: no advice.
    static let adviceThreshold: Int64 = 256 << 10

    /// Copies the source's `st_size` bytes (`status` is its fstat before the copy), or fewer
    /// when it ends early (it shrank: the caller's check sees it), reporting the running total
    /// to `progress` after each chunk; what `progress` throws ends the copy there (the caller
    /// removes the temporary). Returns the count copied.
    func run(status: stat, progress: (Int64) throws -> Void) throws -> Int64 {
        let size = Int64(status.st_size)
        guard size > 0 else { return 0 }
        // Advice only: a filesystem that ignores it loses nothing.
        if size > Self.adviceThreshold { try? Sys.fadvise(input.rawValue, POSIX_FADV_SEQUENTIAL) }
        let devices = destinationDevice.map { CloneRefusals.Pair(source: UInt64(status.st_dev), destination: $0) }
        if devices.map(CloneRefusals.contains) != true, let cloned = try clone(devices) {
            try progress(cloned)
            return cloned
        }
        var state = DenseCopy()
        defer { state.buffer?.deallocate() }
        if let copied = try copySparse(size: size, blocks: Int64(status.st_blocks), state: &state, progress: progress) {
            return copied
        }
        return try copy(from: 0, to: size, state: &state, progress: progress)
    }

    /// What the dense copy learns on the way: whether copy_file_range works, and its buffer.
    struct DenseCopy {
        var useRange = true
        var buffer: UnsafeMutableRawBufferPointer?
    }

    /// The data ranges one by one, then the size; nil when the source has no holes, or this
    /// filesystem cannot say where they are (`SEEK_DATA` refused): copied densely then.
    private func copySparse(size: Int64, blocks: Int64, state: inout DenseCopy, progress: (Int64) throws -> Void) throws -> Int64? {
        guard blocks * 512 < size else { return nil }
        var offset: Int64 = 0
        while offset < size {
            let data: Int64
            do {
                data = try Sys.lseek(input.rawValue, offset, CNIMBUS_SEEK_DATA)
            } catch let error as Errno where error == .noDeviceOrAddress {
                break  // Only a hole from here to the end.
            } catch let error as Errno where offset == 0 && (error == .invalidArgument || error == .notSupported) {
                return nil
            } catch let error as Errno {
                throw error.at("lseek", source.shown)
            }
            guard data < size else { break }
            let hole = try attributing("lseek", source.shown) { try Sys.lseek(input.rawValue, data, CNIMBUS_SEEK_HOLE) }
            let end = min(hole, size)
            let reached = try copy(from: data, to: end, state: &state, progress: progress)
            // The source ended early (it shrank): the caller's check sees it.
            if reached < end { return reached }
            offset = end
        }
        try attributing("truncate", temporary.shown) { try Sys.ftruncate(output.rawValue, size) }
        try progress(size)
        return size
    }

    /// Copies the bytes from `start` to `end` at the same offsets; returns where it stopped
    /// (before `end` only when the source ended early).
    private func copy(from start: Int64, to end: Int64, state: inout DenseCopy, progress: (Int64) throws -> Void) throws -> Int64 {
        var offset = start
        while offset < end {
            let wanted = Int(min(end - offset, Int64(Self.chunkSize)))
            let copied: Int
            if state.useRange, let count = try copyRange(at: offset, count: wanted), count > 0 {
                copied = count
            } else {
                // Refused, or 0, which some filesystems answer before the end: only read(2) is
                // trusted to say where the file ends.
                state.useRange = false
                let chunk = state.buffer ?? .allocate(byteCount: Self.bufferSize, alignment: 4096)
                state.buffer = chunk
                copied = try readWrite(at: offset, count: min(wanted, chunk.count), buffer: chunk)
                if copied == 0 { break }
            }
            offset += Int64(copied)
            try progress(offset)
        }
        return offset
    }

    /// The whole file, or nil when this filesystem pair cannot clone. A refusal that holds for
    /// the whole filesystem pair is remembered for `devices`; `EINVAL` is not, because it can
    /// be about these two files only (Btrfs refuses to clone between files of different
    /// `nodatacow` settings).
    private func clone(_ devices: CloneRefusals.Pair?) throws -> Int64? {
        do {
            try Sys.ficlone(output.rawValue, input.rawValue)
        } catch let error as Errno where Self.cloneRefusals.contains(error) {
            if let devices, error != .invalidArgument { CloneRefusals.insert(devices) }
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

/// The filesystem pairs (by `st_dev`) that refused `FICLONE` in this process, so that each
/// pair is asked once, not once per file. Forgetting costs one failed ioctl, so it is never
/// cleared: a device number that comes back for another filesystem (unmounted, another
/// mounted) is at worst copied without cloning.
enum CloneRefusals {
    struct Pair: Hashable, Sendable {
        var source: UInt64
        var destination: UInt64
    }

    private static let refused = Mutex<Set<Pair>>([])

    static func contains(_ pair: Pair) -> Bool { refused.withLock { $0.contains(pair) } }
    static func insert(_ pair: Pair) { _ = refused.withLock { $0.insert(pair) } }
}
