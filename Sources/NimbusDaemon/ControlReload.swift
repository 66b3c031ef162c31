import NimbusProtocol
import Synchronization

/// Reloads the configuration (the `reload` method and SIGHUP) and says what changed: the
/// settings the running pair takes over at once, and those that need a restart.
public final class ConfigurationReloader: Sendable {
    /// Settings `PairRuntime.reload` (and the desktop notifier) apply while running, as
    /// `section.key`: the engine, the runtime and the hydration server read them afresh.
    static let liveSettings: Set<String> = [
        "pair.mode", "placeholders.hydrate-on-open", "placeholders.open-rate-limit", "placeholders.fill-timeout",
        "placeholders.refused-programs", "cache.cache-limit", "cache.evict-after", "cache.min-free-space",
        "safety.max-delete-percent", "safety.version-retention", "versions.max-size", "watch.poll-interval",
        "watch.rescan-interval", "watch.quiet-period", "desktop.notifications",
    ]

    /// Settings only the daemon's start reads: the folders; the placeholder style, which
    /// decides the fanotify group; whether the cloud is watched or polled, which decides the
    /// watchers; the device name, which names this device's folder of cloud temporaries; the
    /// log level, which the logger is made with. Every key is in exactly one of the two sets.
    static let restartSettings: Set<String> = [
        "pair.local", "pair.cloud", "placeholders.style", "watch.cloud", "device.name", "log.level",
    ]

    /// What the process started with (restart-only settings keep these values).
    private let initial: Configuration
    /// The last configuration applied.
    private let applied: Mutex<Configuration>
    private let load: @Sendable () throws -> Configuration
    private let apply: @Sendable (Configuration) -> Void
    private let log: Logger

    public init(initial: Configuration, log: Logger, load: @escaping @Sendable () throws -> Configuration,
                apply: @escaping @Sendable (Configuration) -> Void) {
        self.initial = initial
        self.applied = Mutex(initial)
        self.log = log
        self.load = load
        self.apply = apply
    }

    /// Reads the configuration again and applies it. A configuration error throws an
    /// `RPCError` (`failed`, with the file, line and key) and changes nothing. Settings that
    /// need a restart are logged here, once, whether SIGHUP or the `reload` method asked.
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
        if !needsRestart.isEmpty {
            log.warning("\(needsRestart.joined(separator: ", ")) changed in the configuration, but only a restart applies "
                        + "\(needsRestart.count == 1 ? "it" : "them"): restart nimbusd to use the new "
                        + "\(needsRestart.count == 1 ? "value" : "values")")
        }
        apply(new)
        return ReloadResult(changed: changed, needsRestart: needsRestart)
    }
}
