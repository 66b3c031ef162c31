import FoundationEssentials
import NimbusProtocol
import NimbusSystem

/// Which daemon to talk to: an instance (whose socket is found the way `nimbusd` chooses
/// it, DESIGN §7) or an explicit socket path (`nimbusd --socket PATH`).
public enum NimbusEndpoint: Sendable, Hashable, CustomStringConvertible {
    case instance(String)
    case socket(String)

    public static let `default` = NimbusEndpoint.instance(Locations.defaultInstance)

    /// The sockets to try, in order: for an instance, the user's own daemon, then the system
    /// unit's (`/run/nimbus/<instance>.sock`), which `nimbusctl` cannot find from its
    /// environment.
    public func candidateSocketPaths(environment: [String: String] = ProcessInfo.processInfo.environment,
                                     uid: UInt32 = ProcessSupport.userID) throws -> [String] {
        switch self {
        case .socket(let path):
            return [path]
        case .instance(let name):
            do {
                let user = try Locations.socketPath(instance: name, environment: environment, uid: uid)
                let system = try Locations.systemSocketPath(instance: name)
                return user == system ? [user] : [user, system]
            } catch {
                throw NimbusClientError.invalidArgument("the instance name \"\(name)\"", reason: error.description)
            }
        }
    }

    public var description: String {
        switch self {
        case .instance(let name): "instance \(name)"
        case .socket(let path): "socket \(path)"
        }
    }
}
