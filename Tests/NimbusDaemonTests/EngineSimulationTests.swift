import Foundation
import NimbusVocabulary
import Synchronization
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon
import NimbusTestSupport

/// Contents the simulated user overwrote during a pass.
final class ReplacedContents: Sendable {
    let set = Mutex<Set<String>>([])
}

@Suite struct EngineSimulationTests {
    /// NIMBUS_SEED=N replays one run; NIMBUS_SIMULATION_RUNS sets how many run.
    @Test func randomEditsFaultsAndCrashesConverge() throws {
        let seeds = SeededRandom.scenarioSeeds("engine simulation", runs: 500, runsVariable: "NIMBUS_SIMULATION_RUNS")
        var failures: [String] = []
        for seed in seeds {
            // Every fourth run in on-demand mode, with evictions and downloads; every eighth
            // with real-name placeholders (the kernel's hooks played by FakePlaceholderMarker).
            var run = SimulationRun(seed: seed, onDemand: seed % 4 == 3, style: seed % 8 == 7 ? .realName : .suffix)
            do { try run.run(steps: 8) } catch {
                failures.append("seed \(seed): \(error)")
                if failures.count >= 3 { break }
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }
}
