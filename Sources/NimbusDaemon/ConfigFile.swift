import NimbusProtocol

/// The INI config file (DESIGN §8), read into entries with their line numbers.
///
/// Syntax, kept deliberately small (like systemd unit files, not like git config):
/// `[section]` headers; `key = value`; whole-line comments starting with `#` or `;`; blank
/// lines; a value may be wrapped in double or single quotes, which are removed (there are no
/// escapes). There are no inline comments, because `#` is legal in folder names; a value that
/// fails to parse and contains ` #` gets a hint saying so.
///
/// The parser knows the schema (which keys exist in which section) so that every mistake is
/// reported at its own line with a suggestion; it does not interpret values.
struct ConfigFile {
    struct Entry: Equatable {
        var section: String
        var key: String
        var value: String
        var line: Int
    }

    /// Sections in the order they are documented, each with its keys.
    typealias Schema = [(section: String, keys: [String])]

    let path: String
    let entries: [Entry]

    static func parse(_ bytes: [UInt8], path: String, schema: Schema) throws(ConfigurationError) -> ConfigFile {
        var reader = Reader(path: path, schema: schema)
        var content = bytes[...]
        if content.starts(with: [0xEF, 0xBB, 0xBF]) { content = content.dropFirst(3) }  // UTF-8 BOM
        for (offset, rawLine) in content.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            var line = rawLine
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            try reader.read(line, number: offset + 1)
        }
        return ConfigFile(path: path, entries: reader.entries)
    }

    private struct Reader {
        let path: String
        let schema: Schema
        var section: String?
        var entries: [Entry] = []
        var seen: [String: Int] = [:]  // "section\0key" → line

        init(path: String, schema: Schema) {
            self.path = path
            self.schema = schema
        }

        func fail(_ kind: ConfigurationError.Kind, _ line: Int, key: String? = nil, _ message: String) -> ConfigurationError {
            ConfigurationError(kind: kind, file: path, line: line, section: section, key: key, message: message)
        }

        mutating func read(_ bytes: ArraySlice<UInt8>, number: Int) throws(ConfigurationError) {
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw fail(.notUTF8, number, "the line is not valid UTF-8; save the file as UTF-8")
            }
            if let control = text.unicodeScalars.first(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
                throw fail(.malformedLine, number, "the line contains the control character U+\(String(control.value, radix: 16, uppercase: true).zeroPadded(to: 4))")
            }
            let trimmed = text.trimmedOfBlanks
            if trimmed.isEmpty || trimmed.hasPrefix("#") || trimmed.hasPrefix(";") { return }
            if trimmed.hasPrefix("[") { return try readHeader(trimmed, number: number) }
            guard let equals = trimmed.firstIndex(of: "="), case let key = trimmed[..<equals].trimmedOfBlanks, !key.isEmpty else {
                let hint = trimmed.contains(":") ? " (use '=' between key and value)" : ""
                throw fail(.malformedLine, number, "expected \"key = value\", a [section] header or a comment, got \"\(trimmed)\"\(hint)")
            }
            let value = try unquote(trimmed[trimmed.index(after: equals)...].trimmedOfBlanks, number: number, key: key)
            try record(key: key, value: value, number: number)
        }

        mutating func readHeader(_ trimmed: String, number: Int) throws(ConfigurationError) {
            guard trimmed.hasSuffix("]"), trimmed.count >= 2 else {
                throw fail(.malformedLine, number, "expected a section header such as [pair], got \"\(trimmed)\"")
            }
            let name = String(trimmed.dropFirst().dropLast()).trimmedOfBlanks
            let names = schema.map(\.section)
            guard names.contains(name) else {
                let suggestion = Spelling.closest(to: name, among: names).map { "did you mean [\($0)]? " } ?? ""
                throw ConfigurationError(kind: .unknownSection, file: path, line: number, section: name, key: nil,
                                         message: "unknown section; \(suggestion)(sections: \(names.joined(separator: ", ")))")
            }
            section = name
        }

        func unquote(_ value: String, number: Int, key: String) throws(ConfigurationError) -> String {
            guard let first = value.first, first == "\"" || first == "'" else { return value }
            guard value.count >= 2, value.last == first else {
                throw fail(.badValue, number, key: key, "unterminated quote in \(value)")
            }
            return String(value.dropFirst().dropLast())
        }

        mutating func record(key: String, value: String, number: Int) throws(ConfigurationError) {
            let home = schema.first { $0.keys.contains(key) }?.section
            guard let section else {
                let where_ = home.map { "put it under [\($0)]" } ?? "put it under a section header such as [pair]"
                throw fail(.keyOutsideSection, number, key: key, "key outside any section; \(where_)")
            }
            let keys = schema.first { $0.section == section }?.keys ?? []
            guard keys.contains(key) else {
                let message: String
                if let suggestion = Spelling.closest(to: key, among: keys) {
                    message = "unknown key; did you mean \(suggestion)?"
                } else if let home {
                    message = "unknown key in [\(section)]; \(key) belongs in [\(home)]"
                } else {
                    message = "unknown key; [\(section)] has \(keys.joined(separator: ", "))"
                }
                throw fail(.unknownKey, number, key: key, message)
            }
            let id = section + "\u{0}" + key
            if let earlier = seen[id] {
                throw fail(.duplicateKey, number, key: key, "duplicate key; it is already set on line \(earlier)")
            }
            seen[id] = number
            entries.append(Entry(section: section, key: key, value: value, line: number))
        }
    }
}
