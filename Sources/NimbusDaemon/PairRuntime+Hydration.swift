import NimbusCore
import NimbusSystem

/// Real-name placeholders at run time (DESIGN §5): the hydration server answers the pair's
/// fanotify group, the engine learns what it filled (journal, state, `watch` and `status`
/// progress) on its own thread, and the marker lets the engine write, evict and convert.
extension PairRuntime where FS == DiskFileSystem {
    /// Also in mirror mode: a file the user evicts stays a placeholder there, `mode` is a live
    /// setting (a reload to on-demand makes placeholders at once), and a group systemd kept
    /// across a crash may hold readers of placeholders from before. At idle the server's thread
    /// sleeps without a timeout, so it costs a thread and a pipe, nothing more.
    func startHydration() {
        guard options.engine.placeholderStyle == .realName else { return }
        guard let group = options.fanotifyGroup else {
            log.error("real-name placeholders without a fanotify group: placeholders cannot be written or fetched")
            return
        }
        let engine = self.engine
        let server: HydrationServer
        do {
            server = try HydrationServer(
                group: group, cloudRootPath: SystemPath(options.cloudRoot), settings: options.hydration, log: log,
                progress: { path, done, size in engine.noteHydrationProgress(path, done: done, of: size) },
                completed: { [weak self] outcome in self?.perform { engine.applyHydration(outcome) } })
        } catch {
            log.error("cannot serve real-name placeholders: \(error); placeholders cannot be written or fetched")
            return
        }
        // A storm of refused opens reaches `watch` and the desktop like the suffix style's.
        server.onStorm { [weak self] path, limit, program in
            self?.perform { engine.emit(.fetchesRefused(path, limit: limit, program: program)) }
        }
        hydration = server
        engine.marker = FanotifyPlaceholderMarker(local: engine.local, group: group, server: server)
    }
}
