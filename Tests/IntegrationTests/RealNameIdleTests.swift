import Foundation
import Glibc
import NimbusTestTraits
import Testing

/// README's "idle CPU: no wake-ups" through the real daemon with real-name placeholders, whose
/// fanotify thread used to wake every 200 ms only to look for a stop.
@Suite(.serialized, .onAThreadOfItsOwn(timeLimit: .minutes(3)),
       .enabled(if: RealNameSupport.skipReason == nil, Comment(rawValue: RealNameSupport.skipReason ?? "")))
struct RealNameIdleTests {
    /// Context switches of each thread (`TID name`), from /proc/PID/task/*/status.
    static func switches(_ pid: Int32) throws -> [String: Int] {
        try RealNameSupport.threadStatus(pid).reduce(into: [:]) { result, thread in
            let fields = thread.value
            let count = ["voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"].compactMap { fields[$0].flatMap { Int($0) } }.reduce(0, +)
            result["\(thread.key) \(fields["Name"] ?? "?")"] = count
        }
    }

    /// Settling after the first pass ends with a hand-back of memory about 10 s later, so a
    /// quiet second is waited for (up to 90 s), not assumed; a thread that wakes on a timer
    /// shorter than a second never gives one. Threads that end (idle Dispatch workers) are
    /// no wake-up; one that starts is.
    @Test("an idle daemon with real-name placeholders has a whole second in which none of its threads wakes up")
    func anIdleDaemonSleeps() async throws {
        let s = try RealName.sandbox("idle")
        defer { s.finish() }
        let d = s.daemon
        for index in 0..<20 { try PlaceholderFiles.write(d.cloud + "/f\(index)", Array("file \(index)\n".utf8)) }
        try await d.start()
        try await d.eventually("20 placeholders", timeout: .seconds(60)) {
            (0..<20).map { "f\($0)" }.compactMap { RealName.isNotDownloaded(d, $0) }.first
        }
        let pid = try #require(d.pid)
        var last = (counts: try Self.switches(pid), at: ContinuousClock.now)
        try await d.eventually("a second in which no thread of nimbusd woke up", timeout: .seconds(90), interval: .milliseconds(100)) {
            guard last.at.duration(to: .now) >= .seconds(1) else { return "less than a second watched" }
            let now = (counts: try Self.switches(pid), at: ContinuousClock.now)
            defer { last = now }
            let woke = now.counts.filter { last.counts[$0.key] != $0.value }.map(\.key).sorted()
            return woke.isEmpty ? nil : "these woke up in the last second: \(woke)"
        }
    }
}
