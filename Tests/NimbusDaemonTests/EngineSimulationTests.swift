import Foundation
import NimbusVocabulary
import Synchronization
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon
import NimbusTestSupport

/// The seeds of a randomized run, printed: the one of `NIMBUS_SEED` (a replay), else `runs`
/// of them (or the number in the environment variable `runsVariable`) from 1 by default, a
/// number from `NIMBUS_SEED_BASE`, or the clock with `NIMBUS_SEED_BASE=random`. A fixed base
/// keeps CI reproducible; another explores.
func randomRunSeeds(_ what: String, runs: Int, runsVariable: String) -> [UInt64] {
    let environment = ProcessInfo.processInfo.environment
    if let replay = environment["NIMBUS_SEED"].flatMap(UInt64.init) { return [replay] }
    let first: UInt64 = switch environment["NIMBUS_SEED_BASE"] {
    case "random": UInt64(Date().timeIntervalSince1970 * 1000)
    case let value?: UInt64(value) ?? 1
    case nil: 1
    }
    let seeds = (0..<UInt64(environment[runsVariable].flatMap(Int.init) ?? runs)).map { first &+ $0 }
    print("\(what): seeds \(seeds.first!)…\(seeds.last!) (replay one with NIMBUS_SEED=N)")
    return seeds
}

/// Contents the simulated user overwrote during a pass.
final class ReplacedContents: Sendable {
    let set = Mutex<Set<String>>([])
}

@Suite struct EngineSimulationTests {
    /// NIMBUS_SEED=N replays one run; NIMBUS_SIMULATION_RUNS sets how many run.
    @Test func randomEditsFaultsAndCrashesConverge() throws {
        let seeds = randomRunSeeds("engine simulation", runs: 500, runsVariable: "NIMBUS_SIMULATION_RUNS")
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
