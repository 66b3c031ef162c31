/// The settings of a pair that the config file tunes and the running pair uses as they are,
/// with their built-in defaults, stated here and nowhere else (DESIGN §8): the config parser
/// starts from `defaults`, `--help` prints them, `EngineSettings` and `RuntimeOptions` hold
/// this value, and a reload replaces it in one assignment. Sizes are bytes; intervals are
/// `Duration`s.
///
/// The settings only the daemon's start reads (folders, device name, placeholder style,
/// cloud watching, log level, notifications) stay in `Configuration`, with their defaults.
public struct PairSettings: Equatable, Sendable {
    public static let defaults = PairSettings()

    // [pair]
    public var mode: Configuration.Mode = .mirror
    /// New cloud files appear as placeholders instead of being downloaded (DESIGN §5).
    public var onDemand: Bool {
        get { mode == .onDemand }
        set { mode = newValue ? .onDemand : .mirror }
    }

    // [placeholders]
    /// Opening a placeholder downloads it, at most `openRateLimit` a minute (DESIGN §5).
    public var hydrateOnOpen = true
    /// Downloads triggered by opening placeholders, per minute; beyond it they are refused so
    /// that a `grep -r` does not download the whole cloud. 0 disables them.
    public var openRateLimit = 30
    /// How long a program opening a real-name placeholder waits for it before getting EIO.
    public var fillTimeout: Duration = .seconds(300)
    /// Programs whose opens of real-name placeholders are refused (EPERM) instead of fetching:
    /// indexers and scanners that would otherwise fetch the whole cloud (GNOME, KDE, locate, ClamAV).
    public var refusedPrograms: [String] = [
        "baloo_file", "baloo_file_extractor", "clamd", "clamdscan", "clamscan", "localsearch-3",
        "localsearch-extractor-3", "mlocate", "plocate", "tracker-extract-3", "tracker-miner-fs-3", "updatedb",
        "updatedb.mlocate", "updatedb.plocate",
    ]

    // [cache]
    /// Bytes of downloaded, unpinned files to keep; nil = unlimited.
    public var cacheLimit: Int64?
    /// Evict downloaded files not opened for this long; nil = never.
    public var evictAfter: Duration?
    /// Automatic downloads (opening a placeholder, the cache) leave this many bytes free.
    public var minFreeSpace: Int64 = 1 << 30

    // [safety], [versions]
    /// Mass-delete guard: hold a batch that deletes more than this share of the tracked
    /// entries on one side (and more than `EngineSettings.massDeleteMinimum` entries).
    public var maxDeletePercent = 50
    /// How long replaced and deleted cloud content stays in `.nimbus/versions`.
    public var versionRetention: Duration = .days(30)
    /// The versions store's size limit (`[versions] max-size`); the oldest go first. Nil: none.
    public var versionsMaxSize: Int64?

    // [watch]
    public var pollInterval: Duration = .seconds(30)
    public var rescanInterval: Duration = .hours(1)
    /// A file written without being closed is uploaded once it has been quiet this long.
    public var quietPeriod: Duration = .seconds(2)

    public init() {}
}
