/// Splits a byte stream into NDJSON lines (PROTOCOL.md, "Framing"). Pure: feed it whatever
/// `read` returned, in any pieces; it hands back whole lines without their "\n" (a "\r"
/// before it is dropped too, for hand-typed input) and skips empty lines.
///
/// A line longer than `limit` is reported once as `.tooLong` as soon as the limit is passed,
/// without buffering the rest of it: its remaining bytes are discarded up to the next "\n",
/// so a hostile peer cannot make the reader hold more than `limit` bytes.
public struct LineFramer: Sendable {
    public enum Item: Equatable, Sendable {
        case line([UInt8])
        /// A line passed the limit; `prefix` holds its first bytes (to find an id, for logs).
        case tooLong(prefix: [UInt8])
    }

    public let limit: Int
    private var pending: [UInt8] = []
    private var discarding = false

    public init(limit: Int = maximumLineLength) {
        precondition(limit > 0)
        self.limit = limit
    }

    /// Bytes held for an unfinished line.
    public var bufferedCount: Int { pending.count }

    /// True while the rest of an oversize line is being skipped.
    public var isDiscarding: Bool { discarding }

    public mutating func push(_ bytes: [UInt8]) -> [Item] { push(bytes[...]) }

    /// Concrete types, not `some Collection`: generic code called from another module runs
    /// unspecialized, a witness call per byte, which made a 1 MiB answer cost milliseconds.
    public mutating func push(_ bytes: ArraySlice<UInt8>) -> [Item] {
        var items: [Item] = []
        var rest = bytes
        let newline = UInt8(ascii: "\n")
        while !rest.isEmpty {
            guard let end = rest.firstIndex(of: newline) else {
                take(rest, into: &items)
                break
            }
            take(rest[..<end], into: &items)
            if discarding {
                discarding = false
            } else {
                finishLine(into: &items)
            }
            rest = rest[rest.index(after: end)...]
        }
        return items
    }

    /// Adds part of a line, reporting it the moment it passes the limit.
    private mutating func take(_ part: ArraySlice<UInt8>, into items: inout [Item]) {
        if discarding || part.isEmpty { return }
        // A trailing "\r" belongs to the terminator, so it may exceed the limit by one.
        if pending.count + part.count > limit + 1 {
            let room = max(0, min(256 - min(pending.count, 256), part.count))
            let prefix = Array(pending.prefix(256)) + Array(part.prefix(room))
            items.append(.tooLong(prefix: prefix))
            pending = []
            discarding = true
            return
        }
        pending.append(contentsOf: part)
    }

    private mutating func finishLine(into items: inout [Item]) {
        if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
        if pending.count > limit {
            items.append(.tooLong(prefix: Array(pending.prefix(256))))
        } else if !pending.isEmpty {
            items.append(.line(pending))
        }
        pending = []
    }
}
