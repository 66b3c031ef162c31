import Foundation
import NimbusSystem

/// Spawn to READY of `nimbusd --mode on-demand` with an empty local folder and a cloud tree
/// (every file becomes a placeholder), against `cp -a` of `copied`, alternating, in the same
/// run: the creation figure of either placeholder style.
struct PlaceholderCreation {
    let workspace: Workspace
    /// Names the rounds' folders and progress lines.
    let label: String
    /// The daemon's arguments beyond the folders (mode and style).
    let daemonArguments: [String]
    /// Checks the placeholders of a round while the daemon still runs (once stopped, it takes
    /// real-name placeholders' permissions away); throws when they are not all there.
    let check: (_ local: String, _ socket: String) throws -> Void

    struct Runs {
        var ours: [Double] = [], cp: [Double] = [], ratios: [Double] = []
    }

    func measure(tree: String, copied: String, runs: Int) throws -> Runs {
        guard let cp = Shell.which("cp") else { throw BenchError("cp is not installed") }
        var result = Runs()
        for round in 0..<runs {
            var pair: (ours: Double, cp: Double) = (0, 0)
            for tool in rotated(["nimbusd", "cp -a"], by: round) {
                let destination = workspace.fresh("\(label)-\(tool == "cp -a" ? "cp" : "local")-\(round)")
                Shell.sync()
                if tool == "cp -a" {
                    pair.cp = try Shell.check(cp, ["-a", copied, destination]).seconds
                    Shell.remove(destination)
                    continue
                }
                try makeDirectories(SystemPath(destination))
                let state = workspace.fresh("\(label)-state-\(round)")
                let daemon = try Daemon(local: destination, cloud: tree, stateDirectory: state, logPath: state + ".log",
                                        extraArguments: daemonArguments)
                do {
                    pair.ours = try daemon.waitReady(timeout: 600)
                    try check(destination, state + "/ctl.sock")
                } catch {
                    _ = daemon.stop()
                    throw error
                }
                _ = daemon.stop()
                Shell.remove(destination)
                Shell.remove(state)
                Shell.remove(tree + "/.nimbus")
                try? FileManager.default.removeItem(atPath: tree + "/.nimbus-root")
            }
            result.ours.append(pair.ours)
            result.cp.append(pair.cp)
            result.ratios.append(pair.ours / pair.cp)
            progress("\(label) round \(round + 1)/\(runs): nimbusd \(format(pair.ours)) s, cp -a \(format(pair.cp)) s")
        }
        return result
    }
}
