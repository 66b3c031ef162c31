import FoundationEssentials
import NimbusSystem
import NimbusVocabulary

/// Log lines to stderr: plain when run by hand, with `<N>` syslog priority prefixes when
/// stderr is connected to the journal (systemd sets `JOURNAL_STREAM`). Writing never waits
/// for the reader (`LogOutput`): lines it has no room for are dropped and then counted.
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
        // Never waits for the log's reader: a line without room is dropped and counted.
        LogOutput.standardError.write(line(level, message())) { [self] dropped in
            line(.warning, "\(dropped) log line\(dropped == 1 ? " was" : "s were") dropped: the log's reader (stderr) did not keep up")
        }
    }

    /// One line, whatever the message holds: a file name's newline would start a line of its
    /// own, which the journal reads with the priority it begins with (`<0>`: an emergency,
    /// sent to every terminal), and its escape sequences would reach whoever reads the log.
    func line(_ level: Level, _ message: String) -> String {
        let text = printableText(message)
        return journald ? "<\(level.rawValue)>\(text)\n" : "nimbusd: \(level == .info || level == .notice ? "" : "\(level.name): ")\(text)\n"
    }

    public func error(_ m: @autoclosure () -> String) { log(.error, m()) }
    public func warning(_ m: @autoclosure () -> String) { log(.warning, m()) }
    public func notice(_ m: @autoclosure () -> String) { log(.notice, m()) }
    public func info(_ m: @autoclosure () -> String) { log(.info, m()) }
    public func debug(_ m: @autoclosure () -> String) { log(.debug, m()) }
}
