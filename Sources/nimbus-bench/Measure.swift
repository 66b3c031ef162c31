import Dispatch
import Foundation
import NimbusDaemon
import NimbusVocabulary

/// Monotonic time for every measurement (the daemon's own clock, CLOCK_MONOTONIC), as a count
/// of nanoseconds: the bench's own arithmetic on samples.
enum Monotonic {
    private static let clock = SystemClock()
    static var now: Int64 { clock.monotonicNow.nanoseconds }

    /// When `seconds` from now will have passed: a deadline for a wait, as the daemon states one.
    static func deadline(after seconds: Double) -> MonotonicInstant { clock.monotonicNow + .seconds(seconds) }

    /// What is left until `deadline` (zero or less once it has passed).
    static func remaining(until deadline: MonotonicInstant) -> Duration { deadline - clock.monotonicNow }

    /// Whether `deadline` has passed.
    static func hasPassed(_ deadline: MonotonicInstant) -> Bool { remaining(until: deadline) <= .zero }

    /// Seconds taken by `body`.
    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = now
        try body()
        return Double(now - start) / 1e9
    }

    static func seconds(since start: Int64) -> Double { Double(now - start) / 1e9 }

    static func sleep(seconds: Double) {
        if seconds > 0 { Thread.sleep(forTimeInterval: seconds) }
    }
}

/// Medians and percentiles of a run's samples.
enum Stats {
    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// Nearest-rank percentile (`p` in 0…100): the smallest sample with at least p % of the
    /// samples at or below it, so p99 of 200 samples is the second largest.
    static func percentile(_ values: [Double], _ p: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }
}

/// A finished child process.
struct CommandResult {
    var status: Int32
    /// What it wrote to stderr (and stdout, unless that was discarded).
    var output: String
    /// From just before the spawn to the moment it was reaped.
    var seconds: Double

    var succeeded: Bool { status == 0 }
}

/// Child processes: the commands Nimbus is compared with, `sync`, `rm -rf`.
enum Shell {
    /// Runs `executable` to completion. Output goes to a pipe (or /dev/null with
    /// `discardOutput`); the time is taken around spawn and exit, with no polling in between.
    static func run(_ executable: String, _ arguments: [String], discardOutput: Bool = false) -> CommandResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let errors = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = discardOutput ? FileHandle.nullDevice : errors
        process.standardError = errors
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        let start = Monotonic.now
        do {
            try process.run()
        } catch {
            return CommandResult(status: -1, output: "cannot run \(executable): \(error)", seconds: 0)
        }
        // Drain the pipe while waiting, so a chatty command cannot block on a full pipe.
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        exited.wait()
        let seconds = Monotonic.seconds(since: start)
        return CommandResult(status: process.terminationStatus, output: String(decoding: output, as: UTF8.self),
                             seconds: seconds)
    }

    /// Runs a command that must succeed; throws with its output otherwise.
    @discardableResult
    static func check(_ executable: String, _ arguments: [String], discardOutput: Bool = false) throws -> CommandResult {
        let result = run(executable, arguments, discardOutput: discardOutput)
        guard result.succeeded else {
            throw BenchError("\(([executable] + arguments).joined(separator: " ")) exited \(result.status): "
                + result.output.trimmingCharacters(in: .whitespacesAndNewlines).prefix(500))
        }
        return result
    }

    /// The full path of a program on $PATH, or nil.
    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// sync(1): flushes every filesystem, so that one timed run does not pay for the
    /// writeback of the one before. Returns how long it took.
    @discardableResult
    static func sync() -> Double { run(syncPath, []).seconds }

    /// `sync -f PATH`: flushes only the filesystem that holds `path` (syncfs), the durability
    /// step a fair baseline adds to `cp -a`, since nimbusd makes every file durable.
    static func sync(filesystemOf path: String) -> Double { run(syncPath, ["-f", path]).seconds }

    static let syncPath = which("sync") ?? "/bin/sync"

    /// rm -rf, untimed; never fails loudly (the caller checks what matters).
    static func remove(_ path: String) {
        _ = run(which("rm") ?? "/bin/rm", ["-rf", "--", path])
    }
}

/// A failure that ends one figure (it is reported as failed with this reason).
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Alternates the compared commands between runs: run r starts with the r-th one.
func rotated<Item>(_ items: [Item], by round: Int) -> [Item] {
    guard !items.isEmpty else { return items }
    let shift = round % items.count
    return Array(items[shift...] + items[..<shift])
}
