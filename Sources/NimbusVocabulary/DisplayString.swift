/// Human-readable text for a byte name: valid UTF-8 as is, other bytes as `\xNN`.
public func displayString(_ bytes: [UInt8]) -> String {
    if let text = String(validating: bytes, as: UTF8.self) { return text }
    var result = ""
    var index = 0
    while index < bytes.count {
        // Decode the longest valid UTF-8 prefix, escape one byte, repeat.
        var end = index
        var decoded: String?
        for length in (1...min(4, bytes.count - index)).reversed() {
            if let s = String(validating: bytes[index..<(index + length)], as: UTF8.self) {
                decoded = s; end = index + length; break
            }
        }
        if let decoded {
            result += decoded; index = end
        } else {
            let hex = String(bytes[index], radix: 16, uppercase: true)
            result += "\\x" + (hex.count == 1 ? "0" + hex : hex); index += 1
        }
    }
    return result
}

/// `text` with every control character (C0, DEL and C1) shown as `\xNN`, in the manner of
/// `displayString`, for text that goes to a terminal or a log line and may hold a file name:
/// a name is any bytes but `/` and NUL, and a newline in one would split a line in two (a
/// journal line starting `<0>` would be logged as an emergency), an escape sequence would be
/// obeyed by the terminal.
public func printableText(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: isControlCharacter) else { return text }
    var result = ""
    for scalar in text.unicodeScalars {
        if isControlCharacter(scalar) {
            let hex = String(scalar.value, radix: 16, uppercase: true)
            result += "\\x" + (hex.count == 1 ? "0" + hex : hex)
        } else {
            result.unicodeScalars.append(scalar)
        }
    }
    return result
}

/// C0 (below U+0020), DEL and C1 (U+0080 to U+009F): the characters a terminal may act on.
public func isControlCharacter(_ scalar: Unicode.Scalar) -> Bool {
    scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
}
