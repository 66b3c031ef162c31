import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// Both folders there and marked as this pair's before any pass (DESIGN §3): otherwise the
/// pair is halted, with the reason in its status, until they are back.
extension SyncEngine {
    func rootsAreReady() -> Bool {
        let firstPairing = state.withLock { $0.index.count == 0 }
        var missingRoot: String?
        for side in Side.allCases {
            do { try system(side).revalidateRoot() } catch {
                missingRoot = "The \(side) folder \(side == .local ? rootNames.local : rootNames.cloud) cannot be opened (\(error)): it may be unmounted, renamed or deleted. Nothing is synced until it is back."
            }
        }
        let check = missingRoot.map { RootMarkers.Check.missing($0) } ?? RootMarkers.check(
            local: local, cloud: cloud, firstPairing: firstPairing, localRoot: rootNames.local, cloudRoot: rootNames.cloud, now: clock.wallNow,
            beforeCreatingCloudMarker: { probeCloudIfNeeded(force: true) },
            wroteLocalMarker: { state.withLock { $0.localMarkerAwaitsFlush = true } })
        switch check {
        case .ready:
            let wasHalted = updateStatus { status in
                defer { status.haltReason = nil }
                return status.isHalted
            }
            if wasHalted { log.notice("both folders are back; sync resumes") }
            probeCloudIfNeeded(force: wasHalted)
            return true
        case .missing(let message):
            let isNew = updateStatus { status in
                defer { status.haltReason = message }
                return status.haltReason != message
            }
            if isNew { log.error(message) }
            return false
        }
    }
}
