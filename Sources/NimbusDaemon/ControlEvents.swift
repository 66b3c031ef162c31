import NimbusCore
import NimbusProtocol
import NimbusSystem
import NimbusVocabulary

/// Turns engine events into `event` and `progress` notifications (PROTOCOL.md, "watch").
/// Each is encoded once for all watchers. Progress is thinned to about ten notifications a
/// second per path (always the first and the last), because the copier reports every chunk.
struct ControlEventFanOut {
    struct Line {
        var bytes: [UInt8]
        var isProgress: Bool
    }

    static let progressInterval: Duration = .milliseconds(100)
    /// When each path in progress last had a notification.
    private var lastProgress: [RelativePath: MonotonicInstant] = [:]

    mutating func notifications(for batch: ControlInbox.Events, encode: (any Encodable) -> [UInt8]?) -> [Line] {
        var lines: [Line] = []
        for item in batch.items {
            switch progress(item.event, wall: item.wall, monotonic: item.monotonic) {
            case .send(let params):
                if let bytes = encode(Notification(method: NotificationMethod.progress.rawValue, params: params)) {
                    lines.append(Line(bytes: bytes, isProgress: true))
                }
            case .thinnedOut:
                continue
            case .notProgress:
                if let params = Self.event(item.event, wall: item.wall),
                   let bytes = encode(Notification(method: NotificationMethod.event.rawValue, params: params)) {
                    lines.append(Line(bytes: bytes, isProgress: false))
                }
            }
        }
        if batch.dropped, let bytes = encode(Notification(method: NotificationMethod.event.rawValue,
                                                          params: EventParams(type: "overflow", timeNs: SystemClock().wallNow.nanoseconds))) {
            lines.append(Line(bytes: bytes, isProgress: false))
        }
        return lines
    }

    private enum ProgressDecision {
        case send(ProgressParams)
        case thinnedOut
        case notProgress
    }

    /// In-progress states become `progress` notifications, thinned per path.
    private mutating func progress(_ event: EngineEvent, wall: WallInstant, monotonic: MonotonicInstant) -> ProgressDecision {
        guard case .stateChanged(let path, let state) = event else { return .notProgress }
        let direction: String
        switch state {
        case .uploading: direction = "upload"
        case .downloading: direction = "download"
        default:
            lastProgress[path] = nil
            return .notProgress
        }
        let fraction = max(0, min(1, state.progress ?? 0))
        let isEdge = fraction == 0 || fraction >= 1
        if !isEdge, let last = lastProgress[path], monotonic - last < Self.progressInterval { return .thinnedOut }
        lastProgress[path] = fraction >= 1 ? nil : monotonic
        return .send(ProgressParams(path: WirePath(path), direction: direction, fraction: fraction, timeNs: wall.nanoseconds))
    }

    static func event(_ event: EngineEvent, wall instant: WallInstant) -> EventParams? {
        let wall = instant.nanoseconds  // the wire's unit
        switch event {
        case .stateChanged(let path, let state):
            var params = EventParams(type: "state", timeNs: wall)
            params.setPath(WirePath(path))
            params.state = state.name
            params.message = state.message
            return params
        case .conflict(let path, let copy):
            var params = EventParams(type: "conflict", timeNs: wall)
            params.setPath(WirePath(path))
            params.setConflictCopy(WirePath(copy))
            return params
        case .error(let path, let message):
            var params = EventParams(type: "error", timeNs: wall)
            params.setPath(WirePath(path))
            params.message = message
            return params
        case .phase(let phase):
            var params = EventParams(type: "phase", timeNs: wall)
            (params.phase, params.reason) = ControlHandler.describe(phase)
            return params
        case .removed(let path, let side):
            var params = EventParams(type: "deleted", timeNs: wall)
            params.setPath(WirePath(path))
            params.side = side == .local ? "local" : "cloud"
            return params
        case .renamed(let from, let to, let side):
            var params = EventParams(type: "renamed", timeNs: wall)
            params.setPath(WirePath(to))
            params.setFrom(WirePath(from))
            params.side = side == .local ? "local" : "cloud"
            return params
        case .deletionsHeld(let side, let held, let applied):
            let sorted = held.sorted()
            var params = EventParams(type: "deletions-held", timeNs: wall)
            if let first = sorted.first { params.setPath(WirePath(first)) }
            params.side = side == .local ? "local" : "cloud"
            params.count = held.count
            params.paths = sorted.prefix(heldPathsShown).map { WirePath($0).text }
            params.keptDeletes = applied > 0 ? applied : nil
            return params
        case .fetchesRefused(let path, let limit, let program):
            var params = EventParams(type: "fetches-refused", timeNs: wall)
            params.setPath(WirePath(path))
            params.limit = limit
            params.program = program
            return params
        }
    }

    /// How many held paths a `deletions-held` event names: enough to recognise a mistake (a
    /// folder emptied, a disk gone), while thousands would make one huge line.
    static let heldPathsShown = 10
}
