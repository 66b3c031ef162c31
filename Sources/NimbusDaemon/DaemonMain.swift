import Dispatch
import Foundation
import NimbusCore
import NimbusSystem

/// The daemon's life: resolve the configuration, start the pair, tell systemd, handle
/// signals, stop cleanly. `nimbusd`'s main only calls `run`.
public enum DaemonMain {
    public static func run(arguments: [String], environment: [String: String]) -> Int32 {
        let launch: DaemonLaunch
        do {
            launch = try DaemonArguments.resolve(
                arguments: arguments, environment: environment,
                currentDirectory: FileManager.default.currentDirectoryPath,
                hostname: ProcessInfo.processInfo.hostName, uid: ProcessSupport.userID,
                readFile: { try ProcessSupport.readFileIfExists($0) })
        } catch let error as any LaunchError {
            FileHandle.standardError.write(Data("nimbusd: \(error)\n".utf8))
            return error.exitCode
        } catch {
            FileHandle.standardError.write(Data("nimbusd: \(error)\n".utf8))
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
            return serve(configuration, environment: environment)
        }
    }

    static func runtimeOptions(_ c: Configuration) -> RuntimeOptions {
        var engine = EngineSettings(deviceName: c.deviceName)
        engine.maxDeletePercent = c.maxDeletePercent
        engine.versionRetention = c.versionRetention
        engine.utcOffsetSeconds = TimeZone.current.secondsFromGMT()
        var options = RuntimeOptions(localRoot: c.localRoot, cloudRoot: c.cloudRoot, stateDirectory: c.stateDirectory, engine: engine)
        options.createMissingRoots = c.usesEmbeddedDefaults
        options.cloudPolls = c.cloudWatch == .poll
        options.pollInterval = c.pollInterval
        options.rescanInterval = c.rescanInterval
        options.quietPeriod = c.quietPeriod
        return options
    }

    static func serve(_ configuration: Configuration, environment: [String: String]) -> Int32 {
        let log = Logger(threshold: configuration.logLevel)
        let notifier = SystemdNotifier(environment: environment)
        let runtime: PairRuntime
        do {
            runtime = try PairRuntime(options: runtimeOptions(configuration), log: log)
        } catch {
            log.error("cannot start: \(error)")
            return 73  // EX_CANTCREAT: the state directory or journal could not be opened
        }
        log.notice("syncing \(configuration.localRoot) with \(configuration.cloudRoot) as \(configuration.deviceName)")
        let signalQueue = DispatchQueue(label: "nimbus.signals")
        let sources = ProcessSupport.handleSignals([ProcessSupport.terminate, ProcessSupport.interrupt], on: signalQueue) { _ in
            notifier.stopping()
            runtime.stop()
        }
        runtime.run {
            let status = runtime.engine.status
            notifier.ready(status: "Synced \(status.tracked) entries")
            log.info("ready: \(status.tracked) entries in sync")
        }
        withExtendedLifetime(sources) {}
        log.notice("stopped")
        return 0
    }
}
