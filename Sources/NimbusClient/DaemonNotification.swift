import FoundationEssentials
import NimbusProtocol

/// A notification from the daemon (PROTOCOL.md, "Notifications"): sent after `watch`, and
/// while a download or an acquire on the same connection makes progress.
public struct DaemonNotification: Sendable, Equatable {
    public enum Payload: Sendable, Equatable {
        /// A path changed state, a conflict or an error appeared, the phase changed, or
        /// events were dropped (`type`: state, conflict, error, phase, overflow).
        case event(EventParams)
        /// An upload or download moved on.
        case progress(ProgressParams)
        /// A notification this version does not know; `message` still has all of it.
        case unknown
    }

    public var method: String
    public var payload: Payload
    /// The whole JSON-RPC notification as the daemon sent it.
    public var message: JSONValue

    public init(method: String, payload: Payload, message: JSONValue) {
        self.method = method
        self.payload = payload
        self.message = message
    }

    init(line: [UInt8], method: String, decoder: JSONDecoder) {
        let data = Data(line)
        self.method = method
        self.message = (try? decoder.decode(JSONValue.self, from: data)) ?? .null
        switch NotificationMethod(rawValue: method) {
        case .event?:
            payload = (try? decoder.decode(ParamsOf<EventParams>.self, from: data).params).flatMap { .event($0) } ?? .unknown
        case .progress?:
            payload = (try? decoder.decode(ParamsOf<ProgressParams>.self, from: data).params).flatMap { .progress($0) } ?? .unknown
        case nil:
            payload = .unknown
        }
    }
}
