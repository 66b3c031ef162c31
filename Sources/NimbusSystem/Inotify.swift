import CNimbus
import Glibc
import NimbusVocabulary

/// One inotify instance: a descriptor the kernel queues events on for every watched
/// directory. It knows nothing about trees or paths; `TreeWatcher` builds those on top.
///
/// The owner closes it exactly once.
struct Inotify: Sendable {
    let descriptor: FileDescriptor

    /// A watch descriptor: the kernel's number for one watched inode within this instance.
    struct Watch: RawRepresentable, Hashable, Sendable {
        let rawValue: Int32
        init(rawValue: Int32) { self.rawValue = rawValue }
    }

    /// The `IN_*` bits, both what to watch for and what an event reports.
    struct Mask: OptionSet, Hashable, Sendable {
        let rawValue: UInt32
        init(rawValue: UInt32) { self.rawValue = rawValue }
        private init(_ flag: Int32) { self.rawValue = UInt32(bitPattern: flag) }

        static let opened = Mask(IN_OPEN)
        static let created = Mask(IN_CREATE)
        static let modified = Mask(IN_MODIFY)
        static let closedWrite = Mask(IN_CLOSE_WRITE)
        static let attributesChanged = Mask(IN_ATTRIB)
        static let deleted = Mask(IN_DELETE)
        static let movedFrom = Mask(IN_MOVED_FROM)
        static let movedTo = Mask(IN_MOVED_TO)
        static let deletedSelf = Mask(IN_DELETE_SELF)
        static let movedSelf = Mask(IN_MOVE_SELF)
        // Reported without being asked for.
        static let unmounted = Mask(IN_UNMOUNT)
        static let queueOverflowed = Mask(IN_Q_OVERFLOW)
        static let ignored = Mask(IN_IGNORED)
        static let isDirectory = Mask(IN_ISDIR)
        // Options of inotify_add_watch.
        static let onlyDirectory = Mask(IN_ONLYDIR)
        static let excludeUnlinked = Mask(IN_EXCL_UNLINK)
    }

    /// One entry of the event stream. `name` is empty when the event concerns the watched
    /// directory itself; the watch is -1 for `queueOverflowed`.
    struct Event: Hashable, Sendable {
        var watch: Watch
        var mask: Mask
        var cookie: UInt32
        var name: [UInt8]
    }

    /// Creates an instance that watches nothing yet. Close-on-exec, and non-blocking so that
    /// reading an empty queue returns at once. The corresponding C function is `inotify_init1`.
    init() throws {
        descriptor = FileDescriptor(rawValue: try Sys.inotifyInit())
    }

    /// Watches `path` for the events in `mask`. Adding an inode that already has a watch
    /// returns that watch with the new mask: a watch belongs to the inode, not to the path.
    /// The corresponding C function is `inotify_add_watch`.
    func addWatch(_ path: SystemPath, for mask: Mask) throws -> Watch {
        Watch(rawValue: try Sys.inotifyAddWatch(descriptor.rawValue, path, mask.rawValue))
    }

    /// Stops watching; the kernel then queues an `ignored` event for the watch.
    /// The corresponding C function is `inotify_rm_watch`.
    func removeWatch(_ watch: Watch) throws {
        try Sys.inotifyRemoveWatch(descriptor.rawValue, watch.rawValue)
    }

    /// Reads as many queued events as fit in `buffer`; none when the queue is empty. The
    /// kernel never splits an event across reads, so a buffer of 64 KiB holds thousands.
    func readEvents(into buffer: inout [UInt8]) throws -> [Event] {
        try buffer.withUnsafeMutableBytes { bytes in
            let count: Int
            do {
                count = try descriptor.read(into: bytes)
            } catch let errno as Errno where errno == .wouldBlock {
                return []
            }
            return Inotify.parse(UnsafeRawBufferPointer(rebasing: bytes[..<count]))
        }
    }

    /// Decodes the kernel's byte stream: a fixed header (`struct inotify_event`) followed by
    /// `len` bytes of NUL-padded name, repeated. A truncated tail is ignored.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> [Event] {
        let header = CNIMBUS_INOTIFY_EVENT_SIZE
        let watchOffset = MemoryLayout<inotify_event>.offset(of: \inotify_event.wd)!
        let maskOffset = MemoryLayout<inotify_event>.offset(of: \inotify_event.mask)!
        let cookieOffset = MemoryLayout<inotify_event>.offset(of: \inotify_event.cookie)!
        let lengthOffset = MemoryLayout<inotify_event>.offset(of: \inotify_event.len)!
        var events: [Event] = []
        var offset = 0
        while offset + header <= bytes.count {
            let nameLength = Int(bytes.loadUnaligned(fromByteOffset: offset + lengthOffset, as: UInt32.self))
            let nameStart = offset + header
            guard nameStart + nameLength <= bytes.count else { break }
            let name = bytes[nameStart..<(nameStart + nameLength)].prefix { $0 != 0 }
            events.append(Event(
                watch: Watch(rawValue: bytes.loadUnaligned(fromByteOffset: offset + watchOffset, as: Int32.self)),
                mask: Mask(rawValue: bytes.loadUnaligned(fromByteOffset: offset + maskOffset, as: UInt32.self)),
                cookie: bytes.loadUnaligned(fromByteOffset: offset + cookieOffset, as: UInt32.self),
                name: Array(name)))
            offset = nameStart + nameLength
        }
        return events
    }

    func close() throws { try descriptor.close() }
}
