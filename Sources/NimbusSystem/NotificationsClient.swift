/// A desktop notification as the Desktop Notifications Specification describes it.
public struct DesktopNotification: Equatable, Sendable {
    public var summary: String
    public var body: String
    /// A themed icon name ("dialog-warning") or a file:// URI.
    public var icon = ""
    /// Pairs of action key and label, in the order shown.
    public var actions: [(key: String, label: String)] = []
    /// 0 low, 1 normal, 2 critical.
    public var urgency: UInt8 = 1
    /// A notification this one replaces (0: none).
    public var replacesID: UInt32 = 0
    /// -1: the server decides; 0: until dismissed; else milliseconds.
    public var timeoutMilliseconds: Int32 = -1

    public init(summary: String, body: String) {
        self.summary = summary
        self.body = body
    }

    public static func == (a: DesktopNotification, b: DesktopNotification) -> Bool {
        a.summary == b.summary && a.body == b.body && a.icon == b.icon && a.urgency == b.urgency
            && a.replacesID == b.replacesID && a.timeoutMilliseconds == b.timeoutMilliseconds
            && a.actions.map(\.key) == b.actions.map(\.key) && a.actions.map(\.label) == b.actions.map(\.label)
    }
}

/// `org.freedesktop.Notifications` on a `DBusConnection`: Notify, GetCapabilities, and the
/// ActionInvoked / NotificationClosed signals.
public enum NotificationsClient {
    public static let service = "org.freedesktop.Notifications"
    public static let path = "/org/freedesktop/Notifications"
    public static let appName = "Nimbus"

    /// What the server sends back about a notification it showed.
    public enum Signal: Equatable, Sendable {
        case actionInvoked(id: UInt32, key: String)
        /// reason: 1 expired, 2 dismissed by the user, 3 closed by a call, 4 undefined.
        case closed(id: UInt32, reason: UInt32)
    }

    /// The `Notify` call for `notification` (app name "Nimbus"), as sent on the wire.
    public static func notifyCall(_ notification: DesktopNotification) -> DBusMessage {
        var hints: [(String, DBusValue)] = [("urgency", .byte(notification.urgency)), ("desktop-entry", .string("nimbus-open"))]
        if !notification.actions.isEmpty { hints.append(("action-icons", .boolean(false))) }
        return .methodCall(destination: service, path: path, interface: service, member: "Notify", body: [
            .string(appName),
            .uint32(notification.replacesID),
            .string(notification.icon),
            .string(notification.summary),
            .string(notification.body),
            .strings(notification.actions.flatMap { [$0.key, $0.label] }),
            .variantDictionary(hints),
            .int32(notification.timeoutMilliseconds),
        ])
    }

    /// Shows `notification`; returns the server's id for it.
    public static func notify(_ notification: DesktopNotification, on connection: DBusConnection) throws -> UInt32 {
        let reply = try connection.call(notifyCall(notification))
        guard let id = reply.body.first?.uint32Value else { throw DBusError.malformed("Notify answered \"\(reply.signature)\"") }
        return id
    }

    /// What the server supports ("actions", "body", "body-markup", …).
    public static func capabilities(on connection: DBusConnection) throws -> [String] {
        let reply = try connection.call(.methodCall(destination: service, path: path, interface: service, member: "GetCapabilities"))
        guard let capabilities = reply.body.first?.stringArray else {
            throw DBusError.malformed("GetCapabilities answered \"\(reply.signature)\"")
        }
        return capabilities
    }

    /// Routes the server's ActionInvoked and NotificationClosed signals to `connection`.
    public static func subscribe(on connection: DBusConnection) throws {
        try connection.addMatch("type='signal',interface='\(service)',path='\(path)'")
    }

    /// The notification signal `message` is, or nil for anything else.
    public static func signal(in message: DBusMessage) -> Signal? {
        guard message.kind == .signal, message.interface == service else { return nil }
        switch (message.member, message.body.first, message.body.dropFirst().first) {
        case ("ActionInvoked", .uint32(let id)?, .string(let key)?): return .actionInvoked(id: id, key: key)
        case ("NotificationClosed", .uint32(let id)?, .uint32(let reason)?): return .closed(id: id, reason: reason)
        default: return nil
        }
    }

    /// Text for a server with "body-markup": `&`, `<` and `>` escaped (a file name with
    /// "<b>" must not turn bold, nor make the server drop the body).
    public static func escapeMarkup(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            default: result.append(character)
            }
        }
        return result
    }
}
