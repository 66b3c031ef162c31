import FoundationEssentials
import NimbusSystem

/// Log lines to stderr: plain when run by hand, with `<N>` syslog priority prefixes when
/// stderr is connected to the journal (systemd sets `JOURNAL_STREAM`).
public final class Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public var name: String { "\(self)" }
    }

    let threshold: Level?
    let journald: Bool
    /// Where lines go instead of stderr, when set.
    let sink: (@Sendable (Level, String) -> Void)?

    public init(threshold: Level = .info, journald: Bool = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil) {
        self.threshold = threshold
        self.journald = journald
        sink = nil
    }

    /// Hands each message at or above `threshold` to `sink` instead of writing it: tests read
    /// what was logged, and how often.
    public init(threshold: Level = .debug, sink: @escaping @Sendable (Level, String) -> Void) {
        self.threshold = threshold
        journald = false
        self.sink = sink
    }

    private init(silent: Void) {
        threshold = nil
        journald = false
        sink = nil
    }

    /// Logs nothing (simulations, benchmarks).
    public static let silent = Logger(silent: ())

    public func log(_ level: Level, _ message: @autoclosure () -> String) {
        guard let threshold, level <= threshold else { return }
        if let sink { return sink(level, message()) }
        let line = journald ? "<\(level.rawValue)>\(message())\n" : "nimbusd: \(level == .info || level == .notice ? "" : "\(level.name): ")\(message())\n"
        ProcessSupport.write(line, toStandardError: true)
    }

    public func error(_ m: @autoclosure () -> String) { log(.error, m()) }
    public func warning(_ m: @autoclosure () -> String) { log(.warning, m()) }
    public func notice(_ m: @autoclosure () -> String) { log(.notice, m()) }
    public func info(_ m: @autoclosure () -> String) { log(.info, m()) }
    public func debug(_ m: @autoclosure () -> String) { log(.debug, m()) }
}
