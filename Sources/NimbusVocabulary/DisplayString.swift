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
