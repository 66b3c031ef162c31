import Foundation
import Glibc
import NimbusTestSupport
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
}
