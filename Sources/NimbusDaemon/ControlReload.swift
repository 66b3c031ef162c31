import NimbusProtocol
import Synchronization

/// Reloads the configuration (the `reload` method and SIGHUP) and says what changed: the
/// settings the running pair takes over at once, and those that need a restart.
public final class ConfigurationReloader: Sendable {
    /// Settings `PairRuntime.reload` applies while running, as `section.key`.
    static let liveSettings: Set<String> = [
        "device.name", "safety.max-delete-percent", "safety.version-retention", "versions.max-size",
        "watch.poll-interval", "watch.rescan-interval", "watch.quiet-period", "desktop.notifications",
    ]

    /// What the process started with (restart-only settings keep these values).
    private let initial: Configuration
    /// The last configuration applied.
    private let applied: Mutex<Configuration>
    private let load: @Sendable () throws -> Configuration
    private let apply: @Sendable (Configuration) -> Void

    public init(initial: Configuration, load: @escaping @Sendable () throws -> Configuration,
                apply: @escaping @Sendable (Configuration) -> Void) {
        self.initial = initial
        self.applied = Mutex(initial)
        self.load = load
        self.apply = apply
    }

    /// Reads the configuration again and applies it. A configuration error throws an
    /// `RPCError` (`failed`, with the file, line and key) and changes nothing.
    public func reload() throws -> ReloadResult {
        let new: Configuration
        do {
            new = try load()
        } catch {
            throw RPCError(.failed, "the configuration was not reloaded", reason: "\(error)",
                           suggestion: "fix the configuration and reload again; the previous settings stay in force")
        }
        let previous = applied.withLock { $0 }
        var changed: [String] = [], needsRestart: [String] = []
        for setting in ConfigSetting.all {
            let name = "\(setting.section).\(setting.key)"
            if Self.liveSettings.contains(name) {
                if setting.render(previous) != setting.render(new) { changed.append(name) }
            } else if setting.render(initial) != setting.render(new) {
                needsRestart.append(name)
            }
        }
        applied.withLock { $0 = new }
        apply(new)
        return ReloadResult(changed: changed, needsRestart: needsRestart)
    }
}
