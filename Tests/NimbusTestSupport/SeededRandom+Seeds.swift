import Foundation

/// Where a randomized test's seeds come from, the same way in every test: `NIMBUS_SEED=N swift
/// test --filter …` replays a run (README), and each test prints the seeds it used.
extension SeededRandom {
    /// The variable that replays a randomized test with the seed it printed.
    public static let replayVariable = "NIMBUS_SEED"

    /// The seed of a randomized test (`label` names it in the output): `NIMBUS_SEED` when set,
    /// else a fresh one. Printed either way, with how to replay it.
    public static func seed(for label: String) -> UInt64 {
        let seed = ProcessInfo.processInfo.environment[replayVariable].flatMap(UInt64.init) ?? UInt64.random(in: 1 ... .max)
        print("\(label): seed \(seed) (replay with \(replayVariable)=\(seed))")
        return seed
    }

    /// A generator for a randomized test, from `seed(for:)`.
    public static func forTest(_ label: String) -> SeededRandom { SeededRandom(seed: seed(for: label)) }

    /// The seeds of a test that tries many random scenarios: `NIMBUS_SEED=N` replays one; else
    /// `runs` seeds in a row (`runsVariable` sets how many) from `NIMBUS_SEED_BASE`, a number or
    /// `random` to explore, 1 when unset so that CI runs the same scenarios each time. Printed.
    public static func scenarioSeeds(_ label: String, runs: Int, runsVariable: String) -> [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let replay = environment[replayVariable].flatMap(UInt64.init) { return [replay] }
        let first: UInt64 = switch environment["NIMBUS_SEED_BASE"] {
        case "random": UInt64(Date().timeIntervalSince1970 * 1000)
        case let value?: UInt64(value) ?? 1
        case nil: 1
        }
        let count = max(1, environment[runsVariable].flatMap(Int.init) ?? runs)
        let seeds = (0..<UInt64(count)).map { first &+ $0 }
        print("\(label): seeds \(seeds.first!)…\(seeds.last!) (replay one with \(replayVariable)=N)")
        return seeds
    }
}
