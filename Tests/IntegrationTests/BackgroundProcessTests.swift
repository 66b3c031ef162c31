import Foundation
import Glibc
import NimbusTestSupport
import Synchronization
import Testing

/// The harness's own child processes: what the suites rely on when they start readers,
/// `nimbusctl watch` or nimbusd in the background.
@Suite struct BackgroundProcessTests {
    @Test func statusOutputAndStdinFromAFileAreAShellsOwn() async throws {
        let scratch = try TemporaryDirectory.make("nimbus-bg")
        defer { TemporaryDirectory.remove(scratch, label: "BackgroundProcessTests") }
        try "from the file\n".write(toFile: scratch + "/in.txt", atomically: true, encoding: .utf8)
        let process = try BackgroundProcess("/bin/sh", ["-c", "cat; echo to-stderr >&2; pwd; exit 3"], standardInput: scratch + "/in.txt",
                                            currentDirectory: scratch, scratch: scratch, separateErrors: true)
        try await process.waitForExit(timeout: .seconds(20))
        #expect(process.status == 3, "\(process.exitDescription)")
        #expect(process.output == "from the file\n\(scratch)\n")
        #expect(process.errors == "to-stderr\n")
    }

    @Test func aReaderHoldsItsFileOpenWhenStartedAndAKillIsASignalStatus() async throws {
        let scratch = try TemporaryDirectory.make("nimbus-bg")
        defer { TemporaryDirectory.remove(scratch, label: "BackgroundProcessTests") }
        try "x".write(toFile: scratch + "/open.txt", atomically: true, encoding: .utf8)
        let reader = try BackgroundProcess(SyncHarness.tool("sleep"), ["60"], standardInput: scratch + "/open.txt", scratch: scratch)
        defer { reader.stop() }
        // No wait here: the file must already be the reader's stdin when the initializer returns.
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(reader.pid)/fd/0") == scratch + "/open.txt")
        #expect(reader.isRunning && reader.status == -1)
        reader.stop()
        #expect(!reader.isRunning && reader.status == 128 + SIGKILL, "\(reader.exitDescription)")
    }

    @Test func itInheritsNoDescriptorOfTheTestProcess() async throws {
        let scratch = try TemporaryDirectory.make("nimbus-bg")
        defer { TemporaryDirectory.remove(scratch, label: "BackgroundProcessTests") }
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        // Without O_CLOEXEC, and at a number no shell picks for itself.
        let held = fcntl(ends[1], F_DUPFD, 300)
        defer { close(ends[0]); close(ends[1]); close(held) }
        #expect(held >= 300)
        let process = try BackgroundProcess("/bin/sh", ["-c", "for f in /proc/$$/fd/*; do echo ${f##*/}; done"], scratch: scratch)
        try await process.waitForExit(timeout: .seconds(20))
        let descriptors = process.output.split(separator: "\n").compactMap { Int32($0) }
        #expect(descriptors.contains(1) && !descriptors.contains(held), "the child holds \(descriptors); the pipe was \(held)")
    }

    static let setprivMissing = FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
        ? nil : "skipped: util-linux's setpriv is not installed, so children cannot be tied to the test process"

    /// A crashed test run once left about a hundred nimbusd running, which used up
    /// fs.inotify.max_user_instances for every other run: a child now dies with the test process.
    @Test(.enabled(if: setprivMissing == nil, Comment(rawValue: setprivMissing ?? "")))
    func aChildDiesWithTheTestProcess() async throws {
        let scratch = try TemporaryDirectory.make("nimbus-bg")
        defer { TemporaryDirectory.remove(scratch, label: "BackgroundProcessTests") }
        let process = try BackgroundProcess("/usr/bin/setpriv", ["--dump"], scratch: scratch)
        try await process.waitForExit(timeout: .seconds(20))
        #expect(process.output.contains("Parent death signal: KILL"), "\(process.output)")
    }

    /// The kernel sends that signal when the *thread* that started the child ends, and the test
    /// runner's threads may end while a test still runs: a child must outlive the one that asked.
    @Test(.enabled(if: setprivMissing == nil, Comment(rawValue: setprivMissing ?? "")))
    func aChildOutlivesTheThreadThatAskedForIt() async throws {
        let scratch = try TemporaryDirectory.make("nimbus-bg")
        defer { TemporaryDirectory.remove(scratch, label: "BackgroundProcessTests") }
        let started = Locked<(child: BackgroundProcess?, error: String?, thread: pid_t)>((nil, nil, 0))
        Thread {
            let result = Result { try BackgroundProcess(SyncHarness.tool("sleep"), ["300"], scratch: scratch) }
            // "PID/task/TID": this thread's id (Glibc's gettid is not imported).
            let thread = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"))
                .flatMap { $0.split(separator: "/").last.flatMap { pid_t($0) } } ?? -1
            started.mutex.withLock { $0 = ((try? result.get()), result.failureDescription, thread) }
        }.start()
        try await Polling.eventually("the thread that asked for the child to end", timeout: .seconds(60)) {
            let (child, error, thread) = started.mutex.withLock { $0 }
            if let error { throw HarnessFailure(error) }
            guard child != nil else { return "no child yet" }
            return FileManager.default.fileExists(atPath: "/proc/self/task/\(thread)") ? "thread \(thread) still there" : nil
        }
        let child = try #require(started.mutex.withLock { $0.child })
        defer { child.stop() }
        // A parent-death signal would have been sent as that thread ended; its effect is
        // given a moment to show (the one wait here for something that must not happen).
        #expect(!(try await child.exited(within: .seconds(2))), "the child died with the thread that asked for it: \(child.exitDescription)")
    }
}

extension Result {
    /// What the failure says, nil on success.
    var failureDescription: String? {
        if case .failure(let error) = self { return "\(error)" }
        return nil
    }
}

/// A value behind a lock that closures on other threads can share.
final class Locked<Value: Sendable>: Sendable {
    let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
}
