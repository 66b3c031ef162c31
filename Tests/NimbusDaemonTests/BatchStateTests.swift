import Synchronization
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon

/// Copies of a large plan wait in a batch for one flush before they are installed: they stay
/// in progress until then, and are reported in sync once installed (issue 15).
@Suite struct BatchStateTests {
    @Test func aBatchedUploadIsReportedInSyncOnceInstalled() throws {
        let pair = Pair { $0.batchThreshold = 2 }
        let names = ["a", "b", "c"]
        for name in names { try pair.local.write(rp(name), Array(name.utf8)) }
        let events = Mutex<[EngineEvent]>([])
        pair.engine.onEvent { event in events.withLock { $0.append(event) } }
        pair.engine.start()
        for name in names {
            let states = events.withLock { all in
                all.compactMap { event -> FileState? in
                    guard case .stateChanged(let path, let state) = event, path == rp(name) else { return nil }
                    return state
                }
            }
            #expect(pair.content(pair.cloud, name) == name)
            #expect(states.first?.isInProgress == true && states.last == .downloaded, "\(name): \(states)")
            #expect(pair.engine.entry(rp(name))?.state == .downloaded)
        }
    }
}
