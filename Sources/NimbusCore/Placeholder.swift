import NimbusVocabulary

/// The local stand-in for a file kept only in the cloud (DESIGN §5): `dir/report.pdf` is
/// represented by the small text file `dir/report.pdf.nimbus`, which says what it stands for
/// and how to get it, and carries the xattrs `user.nimbus.state` and `user.nimbus.size`.
public enum Placeholder {
    public static let suffix: [UInt8] = Array(".nimbus".utf8)
    public static let stateAttribute = "user.nimbus.state"
    public static let sizeAttribute = "user.nimbus.size"
    /// The first line of every placeholder: how a file is recognised as one.
    static let signature = "# Nimbus placeholder"
    /// Placeholders are a few hundred bytes; anything larger is a file of its own.
    public static let maximumSize = 4096

    /// `dir/report.pdf.nimbus` for `dir/report.pdf`; nil when the name would be too long.
    public static func file(for path: RelativePath) -> RelativePath? {
        guard !path.isRoot, path.name.count + suffix.count <= 255 else { return nil }
        return try? path.parent.appending(name: path.name + suffix)
    }

    /// `dir/report.pdf` for `dir/report.pdf.nimbus`; nil for any other name.
    public static func target(of file: RelativePath) -> RelativePath? {
        let name = file.name
        guard name.count > suffix.count, name.suffix(suffix.count).elementsEqual(suffix) else { return nil }
        return try? file.parent.appending(name: Array(name.dropLast(suffix.count)))
    }

    /// The text of the placeholder for `path`, whose cloud file is `cloud`.
    public static func contents(for path: RelativePath, cloud: FileMetadata) -> [UInt8] {
        let quoted = shellQuoted(path.bytes)
        return Array("""
            \(signature): this file stands for a file kept in the cloud.
            [placeholder]
            name = \(displayName(path.name))
            size = \(cloud.size)
            mtime = \(rfc3339(cloud.mtime))
            download = nimbusctl download \(quoted)

            """.utf8)
    }

    /// What a placeholder says about its file; nil when `bytes` is not exactly a placeholder
    /// (one with anything added or changed is somebody's content now).
    public static func parse(_ bytes: [UInt8]) -> (size: Int64, name: String)? {
        guard bytes.count <= maximumSize, bytes.last == UInt8(ascii: "\n"),
              let text = String(validating: bytes, as: UTF8.self) else { return nil }
        let lines = text.dropLast().split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count == 6, lines[0].hasPrefix(signature + ":"), lines[1] == "[placeholder]" else { return nil }
        var values: [String: String] = [:]
        for line in lines.dropFirst(2) {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces }
            guard parts.count == 2 else { return nil }
            values[parts[0]] = parts[1]
        }
        guard values.keys.sorted() == ["download", "mtime", "name", "size"], let size = values["size"].flatMap({ Int64($0) }) else {
            return nil
        }
        return (size, values["name"]!)
    }

    /// `path` as one shell word that names exactly its bytes: single quotes, or bash's
    /// `$'…'` with escapes when it holds control characters or bytes that are not UTF-8 (a
    /// newline would also split the placeholder's text).
    static func shellQuoted(_ bytes: [UInt8]) -> String {
        if let text = String(validating: bytes, as: UTF8.self), !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "'" + text.replacingAll("'", with: "'\\''") + "'"
        }
        let hex = Array("0123456789abcdef".utf8)
        var escaped: [UInt8] = Array("$'".utf8)
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "'"), UInt8(ascii: "\\"): escaped += [UInt8(ascii: "\\"), byte]
            case 0x20..<0x7f: escaped.append(byte)
            default: escaped += [UInt8(ascii: "\\"), UInt8(ascii: "x"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return String(decoding: escaped + [UInt8(ascii: "'")], as: UTF8.self)
    }

    /// The xattrs a placeholder carries.
    public static func attributes(cloud: FileMetadata) -> [(String, [UInt8])] {
        [(stateAttribute, Array(FileState.notDownloaded.name.utf8)), (sizeAttribute, Array("\(cloud.size)".utf8))]
    }

    static func displayName(_ name: [UInt8]) -> String {
        String(decoding: name, as: UTF8.self).map { $0.isNewline ? " " : String($0) }.joined()
    }

    /// `2026-11-21T16:22:37.123456789Z`: a file mtime (data, nanoseconds since the epoch) as text.
    static func rfc3339(_ nanoseconds: Int64) -> String {
        CivilTime(WallInstant(mtime: nanoseconds)).rfc3339()
    }

    /// Whether `bytes` are exactly the placeholder of `path` for `cloud`: what `contents` writes
    /// now, or what Nimbus wrote before a fix. Until then an mtime before 1970 with a fraction
    /// was written one second late (−1.5 s as 23:59:59.5, since the seconds were truncated
    /// toward zero); such a placeholder is still ours, not a file the user edited.
    public static func matches(_ bytes: [UInt8], for path: RelativePath, cloud: FileMetadata) -> Bool {
        if bytes == contents(for: path, cloud: cloud) { return true }
        let mtime = WallInstant(mtime: cloud.mtime)
        guard cloud.mtime < 0, mtime.nanosecondsIntoSecond != 0 else { return false }
        var writtenLate = cloud
        writtenLate.mtime = (mtime + .seconds(1)).nanoseconds
        return bytes == contents(for: path, cloud: writtenLate)
    }
}

extension String {
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        map { $0 == target ? replacement : String($0) }.joined()
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
