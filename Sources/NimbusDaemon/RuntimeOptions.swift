import NimbusSystem

/// How a pair runs, resolved from the configuration: where, and `engine` (which holds the
/// pair's settings; `options.quietPeriod` reads `engine.pair.quietPeriod`).
@dynamicMemberLookup
public struct RuntimeOptions: Sendable {
    public var localRoot: String
    public var cloudRoot: String
    public var stateDirectory: String
    /// The embedded default may create its folders; a configured root must exist already
    /// (creating a folder at an unmounted mount point would sync into the wrong disk).
    public var createMissingRoots = false
    /// Where this daemon says which local folder it serves (pid and socket), so that a second
    /// daemon on the same folder can name it; nil: not said.
    public var servedDirectory: String?
    public var socketPath: String?
    /// Network mounts get no inotify events for other machines' changes: poll instead.
    public var cloudPolls = false
    /// The pre-content group for real-name placeholders (`engine.placeholderStyle == .realName`);
    /// its owner (`DaemonMain`) closes it after the runtime stopped.
    public var fanotifyGroup: FanotifyGroup?
    public var engine: EngineSettings

    public init(localRoot: String, cloudRoot: String, stateDirectory: String, engine: EngineSettings) {
        self.localRoot = localRoot
        self.cloudRoot = cloudRoot
        self.stateDirectory = stateDirectory
        self.engine = engine
    }

    public subscript<Value>(dynamicMember setting: KeyPath<PairSettings, Value>) -> Value {
        engine.pair[keyPath: setting]
    }

    /// Indexers refused, the rate limit and the fill timeout of real-name placeholders.
    public var hydration: HydrationServer.Settings { HydrationServer.Settings(engine.pair) }
}
