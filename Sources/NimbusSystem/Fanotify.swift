import CNimbus
import Glibc
import NimbusVocabulary

/// One fanotify group of class `FAN_CLASS_PRE_CONTENT` (DESIGN §5): the kernel stops every
/// process that opens or reads a marked file and waits for this group's answer, so the daemon
/// can write the file's content first (real-name placeholders, Linux ≥ 6.14).
///
/// Creating it needs `CAP_SYS_ADMIN`; marking, reading events and answering do not (see
/// `Capabilities`). The event descriptors the kernel opens for it are `O_RDWR` and raise no
/// events of their own, so content written through them reaches the file without waking anyone.
///
/// The owner closes it exactly once, and closes every event's `file` after answering it.
public struct FanotifyGroup: Sendable {
    public let descriptor: FileDescriptor

    /// Creates the group: close-on-exec, non-blocking (an empty queue reads as no events; the
    /// server waits in poll). Throws `EPERM` without `CAP_SYS_ADMIN`. The C function is `fanotify_init`.
    public init() throws {
        let flags = UInt32(FAN_CLASS_PRE_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK)
        let eventFlags = UInt32(O_RDWR | O_CLOEXEC)  // O_LARGEFILE: implied on 64-bit
        descriptor = FileDescriptor(rawValue: try Sys.fanotifyInit(flags, eventFileFlags: eventFlags))
    }

    public init(descriptor: FileDescriptor) { self.descriptor = descriptor }

    public func close() throws { try descriptor.close() }

    /// Marks the inode `name` names in `directory` for `events`; a final symlink is never
    /// followed. Marking needs read permission on the file (even for root without
    /// `CAP_DAC_OVERRIDE`). `EINVAL` for pre-content events means a kernel older than 6.14;
    /// `EOPNOTSUPP` a filesystem that does not offer them (tmpfs, NFS).
    /// The corresponding C function is `fanotify_mark`.
    public func mark(_ name: SystemPath, in directory: FileDescriptor, for events: FanotifyEvents = .hydration) throws {
        try Sys.fanotifyMark(descriptor.rawValue, UInt32(FAN_MARK_ADD | FAN_MARK_DONT_FOLLOW), events.rawValue,
                             directory.rawValue, name)
    }

    /// Removes `events` from the mark of `name` in `directory`; the mark goes when nothing is
    /// left of it. `ENOENT` when the inode had no mark. The C function is `fanotify_mark`.
    public func unmark(_ name: SystemPath, in directory: FileDescriptor, for events: FanotifyEvents = .hydration) throws {
        try Sys.fanotifyMark(descriptor.rawValue, UInt32(FAN_MARK_REMOVE | FAN_MARK_DONT_FOLLOW), events.rawValue,
                             directory.rawValue, name)
    }

    /// Removes `events` from the mark of the inode `file` is open on (an event's descriptor,
    /// say; not an `O_PATH` one, which the kernel refuses with `EBADF`).
    public func unmark(file: FileDescriptor, for events: FanotifyEvents = .hydration) throws {
        try Sys.fanotifyMark(descriptor.rawValue, UInt32(FAN_MARK_REMOVE), events.rawValue, file: file.rawValue)
    }

    /// Marks the inode `file` is open on (not an `O_PATH` descriptor: `EBADF`).
    public func mark(file: FileDescriptor, for events: FanotifyEvents = .hydration) throws {
        try Sys.fanotifyMark(descriptor.rawValue, UInt32(FAN_MARK_ADD), events.rawValue, file: file.rawValue)
    }

    /// Marks `path` beneath `root` (no symlink anywhere on the way, no escape from `root`).
    public func mark(beneath root: FileDescriptor, _ path: RelativePath, for events: FanotifyEvents = .hydration) throws {
        try attributing("fanotify_mark", path.shown) {
            try root.withParent(of: path) { directory, name in try mark(name, in: directory, for: events) }
        }
    }

    /// Unmarks `path` beneath `root`; a path that had no mark is not an error.
    public func unmark(beneath root: FileDescriptor, _ path: RelativePath, for events: FanotifyEvents = .hydration) throws {
        try attributing("fanotify_mark", path.shown) {
            do {
                try root.withParent(of: path) { directory, name in try unmark(name, in: directory, for: events) }
            } catch let error as Errno where error == .noSuchFile {
                // ENOENT from the kernel: no mark to remove (the path itself was resolved).
            }
        }
    }

    /// Waits until events are queued or `wait` has passed (nil: no limit); true when there
    /// are some. The C function is `poll`.
    public func waitForEvents(within wait: Duration?) throws -> Bool {
        var fds = [pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0)]
        return try Sys.poll(&fds, wait) > 0
    }

    /// Reads the queued events; none when the queue is empty. Each permission event must be
    /// answered with `respond`, or its process waits forever (until the group is closed).
    public func readEvents() throws -> [FanotifyEvent] {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        return try buffer.withUnsafeMutableBytes { bytes in
            let count: Int
            do {
                count = try descriptor.read(into: bytes)
            } catch let errno as Errno where errno == .wouldBlock {
                return []
            }
            return FanotifyEvent.parse(UnsafeRawBufferPointer(rebasing: bytes[..<count]))
        }
    }

    /// Answers a permission event. `deny(error)` makes the process's call fail with `error`;
    /// the kernel accepts only `FanotifyResponse.deniableErrors`, so any other is answered as
    /// a plain deny (`EPERM`) rather than leave the process waiting. The C function is `write`.
    public func respond(to event: FanotifyEvent, _ response: FanotifyResponse) throws {
        var answer = fanotify_response(fd: event.file.rawValue, response: response.kernelValue)
        try withUnsafeBytes(of: &answer) { bytes in
            _ = try descriptor.write(bytes)
        }
    }
}

/// The `FAN_*` event bits Nimbus marks for and reads.
public struct FanotifyEvents: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// A process opens the file (checked before the open completes).
    public static let openPermission = FanotifyEvents(rawValue: UInt64(FAN_OPEN_PERM))
    /// A process opens the file to execute it.
    public static let openExecPermission = FanotifyEvents(rawValue: UInt64(FAN_OPEN_EXEC_PERM))
    /// A process is about to read, write, truncate or punch the file's content (with the range).
    public static let preAccess = FanotifyEvents(rawValue: UInt64(FAN_PRE_ACCESS))
    /// On a directory's mark: the events of the files in it, too.
    public static let onChild = FanotifyEvents(rawValue: UInt64(FAN_EVENT_ON_CHILD))
    /// The kernel dropped events: the queue was full (never for permission events, which wait).
    public static let queueOverflow = FanotifyEvents(rawValue: UInt64(FAN_Q_OVERFLOW))

    /// Every hook a not-downloaded file needs. `preAccess` alone is not enough: `cp` looks for
    /// data with `SEEK_DATA`, finds only holes and copies zeros without reading (DESIGN §5).
    public static let hydration: FanotifyEvents = [.openPermission, .openExecPermission, .preAccess]

    public var description: String {
        let names: [(FanotifyEvents, String)] = [(.openPermission, "open"), (.openExecPermission, "open-exec"),
                                                 (.preAccess, "pre-access"), (.onChild, "on-child"),
                                                 (.queueOverflow, "overflow")]
        let known = names.filter { contains($0.0) }.map(\.1)
        let rest = subtracting(names.reduce([]) { $0.union($1.0) })
        return (known + (rest.isEmpty ? [] : ["0x" + String(rest.rawValue, radix: 16)])).joined(separator: "|")
    }
}

/// One event read from a `FanotifyGroup`.
public struct FanotifyEvent: Sendable {
    public let events: FanotifyEvents
    /// The file, opened `O_RDWR` for the group (raising no events); the reader closes it.
    /// -1 for an overflow.
    public let file: FileDescriptor
    /// The process (thread group) that opened or accessed the file.
    public let pid: Int32
    /// The bytes about to be accessed, for `preAccess` (a truncate reports the new end).
    public let range: Range<Int64>?

    /// True when the process waits for `respond`.
    public var needsResponse: Bool { !events.isDisjoint(with: .hydration) && file.rawValue >= 0 }

    /// Decodes the kernel's byte stream: `struct fanotify_event_metadata`, then info records
    /// up to `event_len` (a `FAN_EVENT_INFO_TYPE_RANGE` one for pre-access events).
    static func parse(_ bytes: UnsafeRawBufferPointer) -> [FanotifyEvent] {
        let header = MemoryLayout<fanotify_event_metadata>.size
        let lengthOffset = MemoryLayout<fanotify_event_metadata>.offset(of: \.event_len)!
        let metadataLengthOffset = MemoryLayout<fanotify_event_metadata>.offset(of: \.metadata_len)!
        let maskOffset = MemoryLayout<fanotify_event_metadata>.offset(of: \.mask)!
        let fdOffset = MemoryLayout<fanotify_event_metadata>.offset(of: \.fd)!
        let pidOffset = MemoryLayout<fanotify_event_metadata>.offset(of: \.pid)!
        var events: [FanotifyEvent] = []
        var offset = 0
        while offset + header <= bytes.count {
            let length = Int(bytes.loadUnaligned(fromByteOffset: offset + lengthOffset, as: UInt32.self))
            guard length >= header, offset + length <= bytes.count else { break }
            let metadataLength = Int(bytes.loadUnaligned(fromByteOffset: offset + metadataLengthOffset, as: UInt16.self))
            var range: Range<Int64>?
            var info = offset + metadataLength
            while info + 4 <= offset + length {
                let type = bytes.load(fromByteOffset: info, as: UInt8.self)
                let infoLength = Int(bytes.loadUnaligned(fromByteOffset: info + 2, as: UInt16.self))
                guard infoLength >= 4, info + infoLength <= offset + length else { break }
                if type == UInt8(FAN_EVENT_INFO_TYPE_RANGE), infoLength >= MemoryLayout<cnimbus_fanotify_range>.size {
                    let start = bytes.loadUnaligned(fromByteOffset: info + 8, as: UInt64.self)
                    let count = bytes.loadUnaligned(fromByteOffset: info + 16, as: UInt64.self)
                    let lower = Int64(clamping: start)
                    range = lower..<(lower + min(Int64(clamping: count), Int64.max - lower))
                }
                info += infoLength
            }
            events.append(FanotifyEvent(
                events: FanotifyEvents(rawValue: bytes.loadUnaligned(fromByteOffset: offset + maskOffset, as: UInt64.self)),
                file: FileDescriptor(rawValue: bytes.loadUnaligned(fromByteOffset: offset + fdOffset, as: Int32.self)),
                pid: bytes.loadUnaligned(fromByteOffset: offset + pidOffset, as: Int32.self),
                range: range))
            offset += length
        }
        return events
    }
}

/// The answer to a permission event.
public enum FanotifyResponse: Sendable, Hashable {
    case allow
    /// The process's open, read or write fails with this error.
    case deny(Errno)

    /// The errors the kernel lets a pre-content group return (fs/notify/fanotify): those that
    /// open(2), read(2) and write(2) of a regular file may give.
    public static let deniableErrors: Set<Errno> = [.ioError, .notPermitted, .busy, .textFileBusy, .wouldBlock,
                                                    .noSpace, .quotaExceeded]

    var kernelValue: UInt32 {
        switch self {
        case .allow: UInt32(FAN_ALLOW)
        case .deny(let error):
            Self.deniableErrors.contains(error) ? cnimbus_fan_deny_errno(error.rawValue) : UInt32(FAN_DENY)
        }
    }
}
