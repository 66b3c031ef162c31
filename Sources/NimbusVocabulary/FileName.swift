/// The rules every name Nimbus makes from a user's name follows (conflict copies, kept
/// versions, the private names of files being removed, coordinated writes' temporaries): it
/// fits in NAME_MAX bytes, or the filesystem refuses it and whatever needed it is tried again
/// for ever; and it stays valid UTF-8 when the user's name was, so that a cut never leaves
/// half a character for a file manager to show as garbage.
public enum FileName {
    /// The longest name Linux filesystems take (NAME_MAX), in bytes.
    public static let maxBytes = 255

    /// `bytes` if they fit in `limit`, else their longest prefix within it that does not end
    /// inside a UTF-8 character. Bytes that are not UTF-8 there (a continuation byte with no
    /// lead byte within the three before it) are cut at `limit` itself: backing up further
    /// would only throw away more of a name that was never text.
    public static func prefix(_ bytes: some Collection<UInt8>, fitting limit: Int) -> [UInt8] {
        let bytes = Array(bytes)
        guard bytes.count > limit else { return bytes }
        let limit = max(0, limit)
        var end = limit
        while end > 0, limit - end < 3, bytes[end] & 0xC0 == 0x80 { end -= 1 }
        return Array(bytes[..<(bytes[end] >= 0xC0 ? end : limit)])
    }

    /// `name` with `insert` before its extension (the part from the last dot, unless the dot
    /// starts the name), shortened to `maxBytes` if it grew past it: the stem first, down to
    /// its first character; when even that leaves no room (an extension of some 220 bytes,
    /// `a.` and 250 more), the whole name is shortened before `insert`, extension included.
    /// `insert` itself is never cut (it says what the name is, and its counter keeps it
    /// unique): it must leave room for a character, which `maxBytes - 4` bytes always do.
    public static func inserting(_ insert: [UInt8], into name: [UInt8]) -> [UInt8] {
        precondition(insert.count <= maxBytes - 4, "an insert of \(insert.count) bytes leaves no room for the name")
        let dot = name.lastIndex(of: UInt8(ascii: ".")).flatMap { $0 > 0 ? $0 : nil }
        let stem = Array(name[..<(dot ?? name.endIndex)])
        let ext = dot.map { Array(name[$0...]) } ?? []
        let keptStem = prefix(stem, fitting: maxBytes - insert.count - ext.count)
        if !keptStem.isEmpty { return keptStem + insert + ext }
        return prefix(stem + ext, fitting: maxBytes - insert.count) + insert
    }
}
