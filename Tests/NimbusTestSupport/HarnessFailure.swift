/// What every test harness throws when a condition is not met: one plain message saying what
/// was awaited, what was seen instead and, for a daemon, the end of its log.
public struct HarnessFailure: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}
