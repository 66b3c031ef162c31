/// Where the session bus listens (the specification's "Server Addresses"), as a socket
/// path for `UnixStreamSocket` ("@name" for the abstract namespace).
public enum DBusAddress {
    /// The socket to try from `DBUS_SESSION_BUS_ADDRESS` (the first `unix:path=` or
    /// `unix:abstract=` entry; other transports such as tcp are skipped), else
    /// `$XDG_RUNTIME_DIR/bus` when `exists` says a socket is there. Throws `.noBus` saying why.
    public static func sessionSocket(environment: [String: String], exists: (String) -> Bool) throws(DBusError) -> String {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty {
            for entry in address.split(separator: ";") {
                if let socket = socketPath(String(entry)) { return socket }
            }
            throw DBusError.noBus("DBUS_SESSION_BUS_ADDRESS=\(address) has no unix:path= or unix:abstract= entry")
        }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            let candidate = runtime + "/bus"
            if exists(candidate) { return candidate }
            return try failure("DBUS_SESSION_BUS_ADDRESS is not set and there is no \(candidate)")
        }
        return try failure("neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR is set (a system service has no session bus)")
    }

    private static func failure(_ why: String) throws(DBusError) -> String { throw DBusError.noBus(why) }

    /// "unix:path=/run/user/1000/bus,guid=…" → "/run/user/1000/bus";
    /// "unix:abstract=/tmp/dbus-x" → "@/tmp/dbus-x"; nil for anything else.
    static func socketPath(_ entry: String) -> String? {
        guard entry.hasPrefix("unix:") else { return nil }
        for pair in entry.dropFirst(5).split(separator: ",") {
            guard let equals = pair.firstIndex(of: "=") else { continue }
            let key = pair[..<equals]
            guard let value = unescape(pair[pair.index(after: equals)...]), !value.isEmpty else { continue }
            if key == "path" { return value }
            if key == "abstract" { return "@" + value }
        }
        return nil
    }

    /// Values are percent-escaped ("%2c" for a comma); nil on a bad escape.
    static func unescape(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var rest = Array(text.utf8)[...]
        while let byte = rest.popFirst() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard rest.count >= 2, let high = hexDigit(rest.removeFirst()), let low = hexDigit(rest.removeFirst()) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// SASL EXTERNAL's initial response: the uid as decimal text, each byte in hex
    /// (uid 1000 → "31303030").
    public static func externalAuthentication(uid: UInt32) -> String {
        String(uid).utf8.map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xf)]], as: UTF8.self)
        }.joined()
    }
}
