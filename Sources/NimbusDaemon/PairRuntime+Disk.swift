import FoundationEssentials
import NimbusCore
import NimbusSystem

/// The pair nimbusd runs: on disk, watched by inotify, timed by the system clock.
public typealias DiskPairRuntime = PairRuntime<DiskFileSystem, TreeWatcher>

extension PairRuntime where FS == DiskFileSystem, Watcher == TreeWatcher {
    /// Opens the pair's journal, checks and locks its folders, and prepares the engine and
    /// (real-name placeholders) the hydration server. Nothing is synced before `run`.
    public convenience init(options: RuntimeOptions, log: Logger, notifier: SystemdNotifier = SystemdNotifier()) throws {
        try StartupChecks.checkSeparate(local: options.localRoot, cloud: options.cloudRoot, stateDirectory: options.stateDirectory,
                                        ancestry: { FolderAncestry.of(SystemPath($0)) })
        // The state folder is made with the journal's (durable before its first commit).
        let (store, records) = try JournalRecordStore.open(directory: SystemPath(options.stateDirectory).appending("journal"))
        // Never paired: no synced entry, and no local marker (a pair of empty folders has the
        // marker but no entries, and its unmounted cloud folder must be waited for).
        let marker = SystemPath(options.localRoot).appending(RootMarkers.local)
        let neverPaired = records.isEmpty && (try? kindOfPath(marker)) == nil
        try StartupChecks.checkRoots(local: options.localRoot, cloud: options.cloudRoot, firstPairing: neverPaired,
                                     createsMissing: options.createMissingRoots, kind: { try kindOfPath(SystemPath($0)) })
        // The embedded default creates both folders. Otherwise the local one is created on the
        // first pairing only: nothing was synced, so a missing local folder cannot be mistaken
        // for deleted files. A missing cloud folder may be an unmounted mount point.
        for root in [options.localRoot, options.cloudRoot]
        where options.createMissingRoots || (records.isEmpty && root == options.localRoot) {
            do {
                try makeDirectories(SystemPath(root))
            } catch {
                throw StartupProblem(description: "cannot create the \(root == options.localRoot ? "local" : "cloud") folder \(root): \(error)",
                                     exitCode: StartupProblem.cannotCreate)
            }
        }
        let rootLock = try Self.lockLocalRoot(options)
        log.info("journal: \(store.recoveryDescription); \(records.count) synced entries")
        let local = DiskFileSystem(root: SystemPath(options.localRoot), protectsOpenWriters: true)
        let cloud = DiskFileSystem(root: SystemPath(options.cloudRoot),
                                   temporaryDirectory: RootMarkers.temporary(for: options.engine.deviceName))
        let clock = SystemClock()
        let engine = SyncEngine(local: local, cloud: cloud, store: store, records: records, clock: clock,
                                settings: options.engine, log: log, rootNames: (options.localRoot, options.cloudRoot))
        let ignoreFile = SystemPath(options.localRoot).appending(SystemPath(".nimbusignore"))
        self.init(engine: engine, store: store, options: options, clock: clock, log: log, notifier: notifier, rootLock: rootLock,
                  readIgnoreFile: { try ProcessSupport.readFileIfExists(ignoreFile.description) },
                  makeWatcher: { _, root, options in try TreeWatcher(root: root, options: options) })
        startHydration()
    }

    /// Locks the local folder (one daemon per folder) and says who holds it. A local folder
    /// missing now (a pair synced before, its disk not mounted) is not locked: it is waited for.
    static func lockLocalRoot(_ options: RuntimeOptions) throws -> DirectoryLock? {
        let root = SystemPath(options.localRoot)
        guard (try? kindOfPath(root)) == .directory else { return nil }
        guard let lock = try DirectoryLock.acquire(root) else {
            let identity = try? DirectoryLock.identity(of: root)
            let holder = identity.flatMap { DirectoryLock.holder(device: $0.device, inode: $0.inode) }
            var socket: String?
            if let holder, let identity, let file = options.servedFile(device: identity.device, inode: identity.inode),
               let text = try? String(contentsOfFile: file, encoding: .utf8) {
                let lines = text.split(separator: "\n").map(String.init)
                if lines.count >= 2, lines[0] == "\(holder)" { socket = lines[1] }
            }
            throw StartupChecks.alreadyServed(local: options.localRoot, holder: holder, socket: socket)
        }
        if let file = options.servedFile(device: lock.device, inode: lock.inode), let socket = options.socketPath {
            try? makeDirectories(SystemPath(options.servedDirectory!), permissions: 0o700)
            try? ProcessSupport.writeNote("\(ProcessSupport.processID)\n\(socket)\n", to: file)
        }
        return lock
    }
}

extension RuntimeOptions {
    /// Where this daemon notes that it serves the local folder with this identity.
    func servedFile(device: UInt64, inode: UInt64) -> String? {
        servedDirectory.map { $0 + "/served-\(device)-\(inode)" }
    }
}
