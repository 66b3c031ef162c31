import NimbusCore
import NimbusProtocol
import NimbusSystem

extension DaemonMain {
    /// Starts the desktop notifications for `runtime` when a session bus exists (a user
    /// service; a system service has none), whatever `[desktop] notifications` says, so that a
    /// reload can switch them on. Their actions run the same engine calls as the control
    /// protocol, on the engine thread.
    static func startDesktopNotifier(_ configuration: Configuration, environment: [String: String],
                                     runtime: DiskPairRuntime, log: Logger) -> DesktopNotifier? {
        let filter = DesktopAlertFilter(localRoot: configuration.localRoot, cloudRoot: configuration.cloudRoot,
                                        controlCommand: controlCommand(configuration, environment: environment))
        let engine = runtime.engine
        let actions = DesktopNotifier.Actions(
            decideDeletes: { confirm, paths, outcome in
                runtime.perform {
                    let held = engine.heldDeletePaths
                    guard !held.isEmpty, held == paths else {
                        let why = held.isEmpty ? "they were already decided" : "the deletions held changed since"
                        log.warning("nothing was \(confirm ? "confirmed" : "restored") from the desktop notification: \(why); "
                                    + "'nimbusctl status' shows what is held now")
                        outcome(DesktopAlert(summary: "Nothing was done", body: "Nimbus did nothing: \(why). "
                                             + "\(ShellWord.command(filter.controlCommand + ["status"])) shows what is held now."))
                        return
                    }
                    let count = confirm ? engine.confirmDeletes() : engine.revertDeletes()
                    log.notice("\(count) held deletion(s) \(confirm ? "confirmed" : "reverted") from the desktop notification")
                    outcome(confirm
                        ? DesktopAlert(summary: "Deletions confirmed", body: "\(count) held deletion(s) carried out.")
                        : DesktopAlert(summary: "Files restored", body: "\(count) deletion(s) undone: the files are copied back."))
                }
            },
            openFolder: { FolderOpener.open($0, log: log) })
        guard let notifier = DesktopNotifier.start(environment: environment, enabled: configuration.notifications,
                                                   filter: filter, log: log, actions: actions) else { return nil }
        engine.onAlert { notifier.post($0) }
        return notifier
    }

    /// `nimbusctl` with what reaches this daemon: nothing for the default instance,
    /// `--instance NAME` for another, `--socket PATH` for a socket given by flag.
    static func controlCommand(_ configuration: Configuration, environment: [String: String]) -> [String] {
        let standard = try? Locations.socketPath(instance: configuration.instance, environment: environment, uid: ProcessSupport.userID)
        if standard != configuration.socketPath { return ["nimbusctl", "--socket", configuration.socketPath] }
        return configuration.instance == Locations.defaultInstance ? ["nimbusctl"] : ["nimbusctl", "--instance", configuration.instance]
    }
}
