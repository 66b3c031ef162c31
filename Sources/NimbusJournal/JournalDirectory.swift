import NimbusSystem
import NimbusVocabulary

/// The journal's own states. Syscall failures of its files are `SystemError`s naming the file.
public enum JournalError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Another open journal (another daemon, or another `Journal` in this process) holds the
    /// directory's lock.
    case locked(SystemPath)
    case closed

    public var description: String {
        switch self {
        case let .locked(path): "the journal in \(path) is in use by another process"
        case .closed: "the journal is closed"
        }
    }
}

/// The journal's directory and the few file operations the journal needs. Every file is
/// reached through the directory's descriptor, and every failure is a `SystemError` that
/// names the file.
struct JournalDirectory {
    static let snapshotName: SystemPath = "journal.snapshot"
    static let logName: SystemPath = "journal.log"
    /// The journal holds path names: keep it private to its user.
    private static let filePermissions: UInt32 = 0o600
    private static let directoryPermissions: UInt32 = 0o700

    let path: SystemPath
    let descriptor: FileDescriptor
    /// The folders `open` created (the directory and missing parents), outermost first: their
    /// entries are not durable until `syncCreatedFolders`.
    let created: [SystemPath]

    /// Opens the directory, creating it and missing parents (not flushed: see `created`), and
    /// takes its exclusive lock (held until `close`), so two writers can never interleave their
    /// appends; a lock held elsewhere is asked for again every 10 ms for `lockWait` (see `Journal.lockWait`).
    static func open(_ path: SystemPath, lockWait: Duration = Journal.lockWait) throws -> JournalDirectory {
        let descriptor: FileDescriptor
        var created: [SystemPath] = []
        do {
            descriptor = try FileDescriptor.open(path, .directory)
        } catch let error as Errno where error == .noSuchFile {
            created = try failing("mkdir", path) { try makeDirectories(path, permissions: directoryPermissions) }
            descriptor = try failing("open", path) { try FileDescriptor.open(path, .directory) }
        } catch let error as Errno {
            throw error.at("open", path)
        }
        let directory = JournalDirectory(path: path, descriptor: descriptor, created: created)
        do {
            let clock = ContinuousClock()
            let deadline = clock.now + lockWait
            while try !directory.io("lock", nil, { try descriptor.tryLockExclusive() }) {
                guard clock.now < deadline else { throw JournalError.locked(path) }
                ProcessSupport.pause(for: .milliseconds(10))
            }
        } catch {
            directory.close()
            throw error
        }
        return directory
    }

    func close() { try? descriptor.close() }

    /// The file opened for reading and writing, or nil when it does not exist.
    func openIfPresent(_ name: SystemPath) throws -> FileDescriptor? {
        do {
            return try FileDescriptor.open(name, .readWrite, relativeTo: descriptor)
        } catch let error as Errno where error == .noSuchFile {
            return nil
        } catch let error as Errno {
            throw error.at("open", path.appending(name))
        }
    }

    /// The whole file, read with as few calls as its size allows.
    func readAll(_ file: FileDescriptor, _ name: SystemPath) throws -> [UInt8] {
        try io("read", name) {
            let size = Int(try file.metadata().size)
            var bytes = [UInt8](repeating: 0, count: size)
            var filled = 0
            while filled < size {
                let count = try bytes.withUnsafeMutableBytes { buffer in
                    try file.read(fromAbsoluteOffset: Int64(filled),
                                  into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
                }
                if count == 0 { break }
                filled += count
            }
            bytes.removeSubrange(filled...)
            return bytes
        }
    }

    /// Removes the temporary files an interrupted compaction or recovery left behind.
    func removeTemporaryFiles() throws {
        for name in [Self.snapshotName, Self.logName] {
            let temporary = Self.temporaryName(for: name)
            do {
                try descriptor.removeFile(temporary)
            } catch let error as Errno where error == .noSuchFile {
                continue
            } catch let error as Errno {
                throw error.at("remove", path.appending(temporary))
            }
        }
    }

    /// Creates the temporary file for `name` (replacing any), lets `write` fill it, and
    /// fsyncs it. Returns it open; `installTemporary` then renames it over `name`. On
    /// failure the temporary file is removed.
    func writeTemporary(for name: SystemPath, _ write: (FileDescriptor) throws -> Void) throws -> FileDescriptor {
        let temporary = Self.temporaryName(for: name)
        let file = try io("create", temporary) {
            try FileDescriptor.open(temporary, [.readWrite, .create, .truncate],
                                    permissions: Self.filePermissions, relativeTo: descriptor)
        }
        do {
            try io("write", temporary) {
                try write(file)
                try file.sync()
            }
            return file
        } catch {
            try? file.close()
            try? descriptor.removeFile(temporary)
            throw error
        }
    }

    /// Creates `name` empty (emptying it when it exists) and returns it open for reading and
    /// writing. Nothing is flushed.
    func createEmptyFile(_ name: SystemPath) throws -> FileDescriptor {
        try FileDescriptor.open(name, [.readWrite, .create, .truncate], permissions: Self.filePermissions, relativeTo: descriptor)
    }

    /// Atomically replaces `name` by its temporary file. Durable only after `synchronize`.
    func installTemporary(for name: SystemPath) throws {
        let temporary = Self.temporaryName(for: name)
        do {
            try io("rename", temporary) { try descriptor.rename(temporary, to: name) }
        } catch {
            try? descriptor.removeFile(temporary)
            throw error
        }
    }

    /// fsyncs the directory, making renames in it durable.
    func synchronize() throws { try io("fsync", nil) { try descriptor.sync() } }

    /// Makes the entries of the folders `open` created durable: a journal folder whose entry a
    /// crash loses takes the journal with it.
    func syncCreatedFolders() throws { try io("fsync the parent folders of", nil) { try syncParents(of: created) } }

    /// Runs `body`, turning an `Errno` into a `SystemError` naming the file (or the directory).
    func io<R>(_ operation: String, _ name: SystemPath?, _ body: () throws -> R) throws -> R {
        try Self.failing(operation, name.map { path.appending($0) } ?? path, body)
    }

    private static func failing<R>(_ operation: String, _ path: SystemPath, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as Errno {
            throw error.at(operation, path)
        }
    }

    private static func temporaryName(for name: SystemPath) -> SystemPath {
        SystemPath(bytes: name.bytes + Array(".tmp".utf8))
    }
}

/// Writes a file in chunks of about 1 MiB: one system call per chunk, not per record.
struct ChunkedFileWriter {
    private static let chunkSize = 1 << 20
    private let file: FileDescriptor
    private var buffer = ByteWriter(reservingCapacity: chunkSize + 4096)

    init(_ file: FileDescriptor) { self.file = file }

    mutating func write(_ record: JournalRecord) throws {
        RecordFormat.encode(record, into: &buffer)
        if buffer.count >= Self.chunkSize { try flush() }
    }

    /// Bytes that are already encoded (a header, records copied from another file).
    mutating func write(_ bytes: ArraySlice<UInt8>) throws {
        try flush()
        try bytes.withUnsafeBytes { try file.writeAll($0) }
    }

    mutating func flush() throws {
        try file.writeAll(buffer.bytes)
        buffer.removeAll()
    }
}
