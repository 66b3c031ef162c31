import FoundationEssentials
import NimbusProtocol
import Synchronization

/// A `list` answer sent page by page (PROTOCOL.md: lines are at most 1 MiB). Entries are
/// written as JSON one by one, so a page is cut exactly where the next entry would pass the
/// budget, and thousands of entries cost milliseconds rather than a JSONEncoder call each.
final class ListingCursor: Sendable {
    static let defaultLimit = 10_000
    static let maximumLimit = 10_000
    /// Bytes of entries per page; the envelope around them is far smaller than the rest.
    static let pageBudget = maximumLineLength - 4096

    private struct State {
        var entries: [Entry]
        var position = 0
    }

    private let state: Mutex<State>
    let limit: Int

    init(_ entries: [Entry], limit: Int) {
        state = Mutex(State(entries: entries))
        self.limit = limit
    }

    var isExhausted: Bool { state.withLock { $0.position >= $0.entries.count } }

    /// The next page: the entries as the inside of a JSON array, and how many there are.
    func nextPage() -> (json: [UInt8], count: Int) {
        state.withLock { s in
            var json: [UInt8] = []
            json.reserveCapacity(min(Self.pageBudget, 256 * min(limit, s.entries.count - s.position)))
            var count = 0, one: [UInt8] = []
            while s.position < s.entries.count && count < limit {
                one.removeAll(keepingCapacity: true)
                EntryJSON.append(s.entries[s.position], to: &one)
                if count > 0 && json.count + 1 + one.count > Self.pageBudget { break }
                if count > 0 { json.append(UInt8(ascii: ",")) }
                json += one
                count += 1
                s.position += 1
            }
            return (json, count)
        }
    }

    /// The whole answer line for one page.
    static func line(id: RequestID, entries json: [UInt8], nextCursor: String?) -> [UInt8] {
        var line = Array(#"{"id":"#.utf8)
        switch id {
        case .number(let n): line += Array(String(n).utf8)
        case .string(let s): JSONText.appendString(s, to: &line)
        }
        line += Array(#","jsonrpc":"2.0","result":{"entries":["#.utf8)
        line += json
        line += Array("]".utf8)
        if let nextCursor {
            line += Array(#","nextCursor":"#.utf8)
            JSONText.appendString(nextCursor, to: &line)
        }
        line += Array("}}\n".utf8)
        return line
    }
}

/// Writes an `Entry` exactly as `JSONRPC.makeEncoder()` would (sorted keys, unescaped
/// slashes); `ProtocolTests` compares the two byte for byte. Entries with a `progress` (a
/// floating-point number, rare in listings) are left to JSONEncoder.
enum EntryJSON {
    static func append(_ entry: Entry, to out: inout [UInt8]) {
        if entry.progress != nil, let data = try? JSONRPC.makeEncoder().encode(entry) {
            out += data
            return
        }
        var first = true
        func key(_ name: String) {
            out.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
            first = false
            JSONText.appendString(name, to: &out)
            out.append(UInt8(ascii: ":"))
        }
        func field(_ name: String, _ value: String?) {
            guard let value else { return }
            key(name)
            JSONText.appendString(value, to: &out)
        }
        field("conflictCopy", entry.conflictCopy)
        field("conflictCopyBytes", entry.conflictCopyBytes)
        field("kind", entry.kind)
        field("message", entry.message)
        field("mtime", entry.mtime)
        key("mtimeNs")
        out += Array(String(entry.mtimeNs).utf8)
        field("path", entry.path)
        field("pathBytes", entry.pathBytes)
        field("residency", entry.residency)
        key("size")
        out += Array(String(entry.size).utf8)
        field("state", entry.state)
        out.append(UInt8(ascii: "}"))
    }
}
