import Foundation

/// Reading and awaiting the daemon's log (stdout and stderr of every launch, appended).
extension NimbusdProcess {
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    /// The log's current length: pass it to `logLines(containing:since:)` or
    /// `waitForLog(_:since:)` to see only later lines.
    public var logMark: Int { log.utf8.count }

    /// The last `lines` lines of the log, under a line naming it.
    public func logTail(lines: Int = 60) -> String {
        "--- log of \(name) (\(logPath)), last \(lines) lines:\n"
            + log.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// The log lines after `mark` that contain `text`.
    public func logLines(containing text: String, since mark: Int = 0) -> [String] {
        let bytes = Array(log.utf8)
        guard mark < bytes.count else { return [] }
        return String(decoding: bytes[mark...], as: UTF8.self).split(separator: "\n").filter { $0.contains(text) }.map(String.init)
    }

    /// Polls the log until a line after `mark` contains `text`; returns that line.
    @discardableResult
    public func waitForLog(_ text: String, since mark: Int = 0, timeout: Duration? = nil) async throws -> String {
        var found: String?
        try await eventually("a log line containing \"\(text)\"", timeout: timeout ?? logWaitTimeout, interval: .milliseconds(20)) {
            found = logLines(containing: text, since: mark).first
            return found == nil ? "not yet" : nil
        }
        return found!
    }

    /// `Polling.eventually`, failing with the end of this daemon's log.
    public func eventually(_ what: String, timeout: Duration = .seconds(10), interval: Duration = .milliseconds(10),
                           _ check: () async throws -> String?) async throws {
        do {
            try await Polling.eventually(what, timeout: timeout, interval: interval, check)
        } catch let timedOut as HarnessFailure {
            throw failure(timedOut.description)
        }
    }
}
