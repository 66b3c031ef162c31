import Glibc
import Testing
@testable import NimbusSystem

/// The parser of the kernel's event stream, fed bytes laid out as `struct inotify_event`.
struct InotifyTests {
    @Test func parsesHeadersAndNamesPaddedWithNULs() {
        let createdDirectory = UInt32(IN_CREATE) | UInt32(IN_ISDIR)
        var stream = eventBytes(watch: 3, mask: createdDirectory, cookie: 0, name: Array("dir".utf8), padTo: 16)
        stream += eventBytes(watch: 4, mask: UInt32(IN_MOVED_FROM), cookie: 77, name: [0x66, 0xFF, 0xFE], padTo: 4)
        stream += eventBytes(watch: -1, mask: UInt32(IN_Q_OVERFLOW), cookie: 0, name: [], padTo: 0)

        let events = stream.withUnsafeBytes { Inotify.parse($0) }
        #expect(events == [
            Inotify.Event(watch: .init(rawValue: 3), mask: [.created, .isDirectory], cookie: 0,
                          name: Array("dir".utf8)),
            Inotify.Event(watch: .init(rawValue: 4), mask: .movedFrom, cookie: 77, name: [0x66, 0xFF, 0xFE]),
            Inotify.Event(watch: .init(rawValue: -1), mask: .queueOverflowed, cookie: 0, name: []),
        ])
    }

    @Test func ignoresATruncatedTail() {
        let whole = eventBytes(watch: 1, mask: UInt32(IN_DELETE), cookie: 0, name: Array("f".utf8), padTo: 16)
        let stream = whole + whole.prefix(20)
        let events = stream.withUnsafeBytes { Inotify.parse($0) }
        #expect(events.map(\.name) == [Array("f".utf8)])
    }

    /// One event as the kernel writes it: the header, then the name NUL-padded to `padTo` bytes.
    private func eventBytes(watch: Int32, mask: UInt32, cookie: UInt32, name: [UInt8], padTo length: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        withUnsafeBytes(of: watch) { bytes += $0 }
        withUnsafeBytes(of: mask) { bytes += $0 }
        withUnsafeBytes(of: cookie) { bytes += $0 }
        withUnsafeBytes(of: UInt32(length)) { bytes += $0 }
        return bytes + name + [UInt8](repeating: 0, count: length - name.count)
    }
}
