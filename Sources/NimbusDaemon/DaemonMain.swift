import Dispatch
import FoundationEssentials
import NimbusCore
import NimbusProtocol
import NimbusSystem

/// The daemon's life: resolve the configuration, start the pair, tell systemd, handle
/// signals, stop cleanly. `nimbusd`'s main only calls `run`.
///
/// Threads, and the four mechanisms that coordinate them (each type says what it owns):
/// - threads of our own (`ProcessSupport.detachThread`, pthreads): the main thread becomes
///   the engine thread (`PairRuntime.run`); one per watched side; the control server; the
///   hydration server's reader; the desktop notifier; the signals' (`handleSignals`); a
///   batch's copy workers (`WorkerThreads`);
/// - Dispatch: the semaphores those threads sleep on (`Inbox`), the control workers' and
///   the hydration fills' queues;
/// - `Mutex`/`Atomic` (Synchronization) for every piece of state shared between threads;
/// - Swift tasks only where an API is async: waiting for a lease (`ControlLeases`).
public enum DaemonMain {
    public static func run(arguments: [String], environment: [String: String]) -> Int32 {
        // Before the configuration, the journal or any file is read, and before any thread
        // starts: the one privileged call, then no capability at all (DESIGN §5).
        let privilege = DaemonPrivilege.acquire(environment: environment)
        ProcessSupport.useOneAllocatorArena()
        // Held back until the signal thread takes them (`handleSignals`): a SIGTERM that comes
        // before it exists, or lands on another thread, waits instead of being lost.
        ProcessSupport.blockSignals(handledSignals)
        // Before the first log line: a log whose reader went away (stderr a closed pipe
        // outside systemd) must not end the daemon with SIGPIPE (exit 141).
        ProcessSupport.ignoreBrokenPipes()
        let launch: DaemonLaunch
        do {
            launch = try DaemonArguments.resolve(
                arguments: arguments, environment: environment,
                currentDirectory: FileManager.default.currentDirectoryPath,
                hostname: ProcessInfo.processInfo.hostName, uid: ProcessSupport.userID,
                readFile: { try ProcessSupport.readFileIfExists($0) })
        } catch let error as any LaunchError {
            ProcessSupport.write("nimbusd: \(error)\n", toStandardError: true)
            return error.exitCode
        } catch {
            ProcessSupport.write("nimbusd: \(error)\n", toStandardError: true)
            return 78
        }
        switch launch {
        case .help(let text):
            print(text)
            return 0
        case .version(let text):
            print(text)
            return 0
        case .run(let configuration):
            return serve(configuration, arguments: arguments, environment: environment, privilege: privilege)
        }
    }

    /// SIGTERM and SIGINT stop cleanly; SIGHUP reloads the configuration.
    static let handledSignals = [ProcessSupport.terminate, ProcessSupport.interrupt, ProcessSupport.hangUp]

    /// Reads the configuration again with the same flags (SIGHUP).
    static func reloadedConfiguration(arguments: [String], environment: [String: String]) throws -> Configuration {
        let launch = try DaemonArguments.resolve(
            arguments: arguments, environment: environment,
            currentDirectory: FileManager.default.currentDirectoryPath,
            hostname: ProcessInfo.processInfo.hostName, uid: ProcessSupport.userID,
            readFile: { try ProcessSupport.readFileIfExists($0) })
        guard case .run(let configuration) = launch else { throw CancellationError() }
        return configuration
    }

    static func runtimeOptions(_ c: Configuration, environment: [String: String] = [:]) -> RuntimeOptions {
        var engine = EngineSettings(deviceName: c.deviceName, pair: c.settings)
        engine.utcOffsetSeconds = ProcessSupport.utcOffsetSeconds
        var options = RuntimeOptions(localRoot: c.localRoot, cloudRoot: c.cloudRoot, stateDirectory: c.stateDirectory, engine: engine)
        options.createMissingRoots = c.usesEmbeddedDefaults
        options.cloudPolls = c.cloudWatch == .poll
        options.socketPath = c.socketPath
        options.servedDirectory = Locations.socketDirectory(environment: environment, uid: ProcessSupport.userID)
        return options
    }

    static func serve(_ configuration: Configuration, arguments: [String], environment: [String: String],
                      privilege: DaemonPrivilege) -> Int32 {
        let log = Logger(threshold: configuration.logLevel)
        logPrivilege(privilege, log: log)
        defer { try? privilege.group?.close() }
        let notifier = SystemdNotifier(environment: environment)
        let style = PlaceholderStyleReport.decide(privilege, localRoot: configuration.localRoot, choice: configuration.placeholderStyle)
        if let missing = style.unavailable {
            log.error("cannot start: style = real-name is set in [placeholders], but real-name placeholders are not possible here: "
                      + "\(missing). Set style = auto or suffix, or see nimbusd(8), PRIVILEGE")
            return 69  // EX_UNAVAILABLE
        }
        log.info("placeholders: \(style.wireName): \(style.reason)")
        var options = runtimeOptions(configuration, environment: environment)
        options.engine.placeholderStyle = style.style
        options.fanotifyGroup = style.style == .realName ? privilege.group : nil
        let group = options.fanotifyGroup
        let runtime: DiskPairRuntime
        do {
            runtime = try DiskPairRuntime(options: options, log: log, notifier: notifier)
        } catch let problem as StartupProblem {
            log.error("cannot start: \(problem)")
            return problem.exitCode
        } catch {
            log.error("cannot start: \(error)")
            return 73  // EX_CANTCREAT: the state directory or journal could not be opened
        }
        log.notice("syncing \(configuration.localRoot) with \(configuration.cloudRoot) as \(configuration.deviceName)")
        let desktop = startDesktopNotifier(configuration, environment: environment, runtime: runtime, log: log)
        defer { desktop?.stop() }
        let deviceName = configuration.deviceName
        let reloader = ConfigurationReloader(
            initial: configuration, log: log,
            load: { try reloadedConfiguration(arguments: arguments, environment: environment) },
            apply: { configuration in
                var reloaded = runtimeOptions(configuration, environment: environment)
                // The style and its group, and the device name (the cloud filesystem's folder of
                // temporaries is named after it), stay as they started: they take a restart.
                reloaded.engine.placeholderStyle = style.style
                reloaded.engine.deviceName = deviceName
                reloaded.fanotifyGroup = group
                runtime.reload(reloaded)
                desktop?.setEnabled(configuration.notifications)
            })
        let server: ControlServer
        do {
            var setup = ControlSetup(pair: runtime, instance: configuration.instance, localRoot: configuration.localRoot,
                                         cloudRoot: configuration.cloudRoot, startedAt: SystemClock().wallNow,
                                         reload: { try reloader.reload() })
            setup.placeholderStyle = style
            server = try ControlServer(socketPath: configuration.socketPath, setup: setup, log: log)
        } catch {
            log.error(ControlServer.explainStartFailure(error, socketPath: configuration.socketPath))
            return 73  // EX_CANTCREAT: the control socket could not be created
        }
        server.start()
        ProcessSupport.handleSignals(handledSignals) { signal in
            guard signal == ProcessSupport.hangUp else {
                notifier.stopping()
                runtime.stop()
                return
            }
            notifier.reloading(at: SystemClock().monotonicNow)
            do {
                _ = try reloader.reload()  // It logs what needs a restart.
            } catch {
                log.error("cannot reload the configuration: \(error); the previous one stays in force")
                notifier.ready(status: runtime.statusLine())
            }
        }
        if let group {
            // systemd keeps the group across a crash (FileDescriptorStoreMax=), so that its marks
            // hold and readers wait for the next daemon instead of reading zeros (DESIGN §5).
            notifier.storeDescriptor(group.descriptor, name: SystemdDescriptors.fanotifyGroupName)
        }
        runtime.run {
            notifier.ready(status: runtime.statusLine())
            log.info("ready: \(runtime.statusLine())")
        }
        // Stopped cleanly: the placeholders are guarded, and the next daemon makes a group of its own.
        if group != nil { notifier.removeStoredDescriptor(name: SystemdDescriptors.fanotifyGroupName) }
        server.stop()
        log.notice("stopped")
        return 0
    }

    static func logPrivilege(_ privilege: DaemonPrivilege, log: Logger) {
        if case .failure(let error) = privilege.dropped {
            log.warning("cannot drop capabilities (\(error)): real-name placeholders are off")
        }
        if let abandoned = privilege.tookOver {
            log.notice("took over the fanotify group systemd kept across the last daemon's end (its marks held, so nobody read zeros)"
                       + (abandoned > 0 ? "; \(abandoned) fetch(es) it left unanswered were refused with EIO" : ""))
        } else if privilege.group != nil {
            log.info("privilege: CAP_SYS_ADMIN served fanotify_init only; every capability is dropped")
        } else if let reason = privilege.unavailableReason {
            log.info("no pre-content fanotify group: \(reason)")
        }
    }
}
