import Glibc
import NimbusVocabulary

/// What a descriptor is ready for, or wants to be woken for.
public struct PollEvents: OptionSet, Sendable, Hashable {
    public let rawValue: Int16
    public init(rawValue: Int16) { self.rawValue = rawValue }
    public static let readable = PollEvents(rawValue: Int16(POLLIN))
    public static let writable = PollEvents(rawValue: Int16(POLLOUT))
    /// The peer closed the connection completely (reported whether asked for or not).
    public static let hangUp = PollEvents(rawValue: Int16(POLLHUP))
    public static let error = PollEvents(rawValue: Int16(POLLERR))
    /// The descriptor is not open: a bug in the caller.
    public static let invalid = PollEvents(rawValue: Int16(POLLNVAL))
}

/// A set of descriptors to wait on with poll(2), for one thread that serves many sockets.
/// epoll is not reachable from Swift's Glibc module; poll's linear cost is nothing next to
/// the few hundred control connections a daemon has.
public struct PollSet {
    private var entries: [pollfd] = []
    private var positions: [Int32: Int] = [:]

    public init() {}

    public var count: Int { entries.count }

    /// Watches `descriptor` for `interest`, replacing what it was watched for.
    public mutating func set(_ descriptor: FileDescriptor, _ interest: PollEvents) {
        if let position = positions[descriptor.rawValue] {
            entries[position].events = interest.rawValue
        } else {
            positions[descriptor.rawValue] = entries.count
            entries.append(pollfd(fd: descriptor.rawValue, events: interest.rawValue, revents: 0))
        }
    }

    public mutating func remove(_ descriptor: FileDescriptor) {
        guard let position = positions.removeValue(forKey: descriptor.rawValue) else { return }
        let last = entries.count - 1
        if position != last {
            entries[position] = entries[last]
            positions[entries[position].fd] = position
        }
        entries.removeLast()
    }

    /// Waits up to `timeout` (nil: no limit) and returns the ready descriptors.
    /// After an interrupting signal the wait restarts with the whole timeout (the daemon
    /// handles its signals on a dispatch queue, so none lands here in practice, and both loops
    /// that wait here are woken by their `WakePipe`). The C function is `poll`.
    public mutating func wait(timeout: Duration?) throws -> [(FileDescriptor, PollEvents)] {
        let result = try attributing("poll", "\(entries.count) descriptors") { try Sys.poll(&entries, timeout) }
        var ready: [(FileDescriptor, PollEvents)] = []
        ready.reserveCapacity(Int(result))
        for index in entries.indices where entries[index].revents != 0 {
            ready.append((FileDescriptor(rawValue: entries[index].fd), PollEvents(rawValue: entries[index].revents)))
            entries[index].revents = 0
        }
        return ready
    }
}

/// Wakes a thread blocked in `PollSet.wait` from any other thread: a non-blocking pipe whose
/// read end is in the poll set. Wake-ups coalesce; a full pipe already means "wake up".
public final class WakePipe: Sendable {
    public let readEnd: FileDescriptor
    private let writeEnd: FileDescriptor

    public init() throws {
        let (reader, writer) = try attributing("pipe", "(wake-up pipe)") { try Sys.pipe() }
        readEnd = FileDescriptor(rawValue: reader)
        writeEnd = FileDescriptor(rawValue: writer)
        // On failure both ends are closed by deinit, which runs once every property is set.
        try attributing("fcntl", "(wake-up pipe)") { for fd in [reader, writer] { try Sys.setNonBlocking(fd, true) } }
    }

    public func wake() {
        // EAGAIN means the pipe is full: a wake-up is already pending.
        _ = try? withUnsafeBytes(of: UInt8(1)) { try Sys.write(writeEnd.rawValue, $0) }
    }

    /// Empties the pipe; call when its read end is readable.
    public func drain() {
        var buffer = [UInt8](repeating: 0, count: 256)
        // Until EAGAIN: the pipe is empty.
        while (try? buffer.withUnsafeMutableBytes({ try Sys.read(readEnd.rawValue, $0) })) ?? 0 > 0 {}
    }

    deinit {
        try? readEnd.close()
        try? writeEnd.close()
    }
}
