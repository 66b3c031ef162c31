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

    public init(threshold: Level = .info, journald: Bool = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil) {
        self.threshold = threshold
        self.journald = journald
    }

    private init(silent: Void) {
        threshold = nil
        journald = false
    }

    /// Logs nothing (simulations, benchmarks).
    public static let silent = Logger(silent: ())

    public func log(_ level: Level, _ message: @autoclosure () -> String) {
        guard let threshold, level <= threshold else { return }
        let line = journald ? "<\(level.rawValue)>\(message())\n" : "nimbusd: \(level == .info || level == .notice ? "" : "\(level.name): ")\(message())\n"
        ProcessSupport.write(line, toStandardError: true)
    }

    public func error(_ m: @autoclosure () -> String) { log(.error, m()) }
    public func warning(_ m: @autoclosure () -> String) { log(.warning, m()) }
    public func notice(_ m: @autoclosure () -> String) { log(.notice, m()) }
    public func info(_ m: @autoclosure () -> String) { log(.info, m()) }
    public func debug(_ m: @autoclosure () -> String) { log(.debug, m()) }
}
