import Foundation
import Glibc
import NimbusTestTraits
import Testing
import NimbusTestSupport

/// Issue 16 through the real daemon, when things go wrong: a vanished cloud copy, a full local
/// disk, twenty readers at once, indexers and storms. A reader gets the right bytes or an
/// error, never zeros, and a failed fill leaves no partial file.
@Suite(.serialized, .onAThreadOfItsOwn(timeLimit: .minutes(5)),
       .enabled(if: RealNameSupport.skipReason == nil, Comment(rawValue: RealNameSupport.skipReason ?? "")))
struct RealNameFaultTests {

    @Test("a reader of a file whose cloud copy vanished gets EIO, and the file stays not downloaded")
    func vanishedCloudCopyGivesEIO() async throws {
        let s = try RealName.sandbox("realNameEIO")
        defer { s.finish() }
        let d = s.daemon
        // The cloud is polled once an hour: the daemon learns of the deletion only when it fills.
        d.config["watch"] = ["cloud": "poll", "poll-interval": "1h"]
        try PlaceholderFiles.write(d.cloud + "/gone.bin", RealName.content(8192, seed: 1))
        try await d.start()
        try await d.eventually("the real-name placeholder") { RealName.isNotDownloaded(d, "gone.bin") }
        let size = try #require(PlaceholderFiles.status(d.local + "/gone.bin")).st_size
        // The daemon's own events of writing the placeholder bring a look at gone.bin, which,
        // once the cloud copy is gone, rightly deletes the placeholder: they are handled first,
        // so that only the read can learn of the deletion.
        try await d.settle()
        try SyncFiles.remove(Array((d.cloud + "/gone.bin").utf8))
        let read = RealName.shell(#"cat "$1""#, [d.local + "/gone.bin"])
        #expect(read.status != 0 && read.output.contains("Input/output error"), "cat of gone.bin: \(read)")
        let after = try #require(PlaceholderFiles.status(d.local + "/gone.bin"), "the placeholder was removed instead of failing the read")
        #expect(after.st_size == size && after.st_blocks == 0, "gone.bin after the failed fill: \(after.st_size) bytes, \(after.st_blocks) blocks")
        #expect(PlaceholderFiles.temporaryFiles(d.local).isEmpty, "\(PlaceholderFiles.temporaryFiles(d.local))")
        try await d.stop()
    }

    @Test("a full local disk (a 32 MiB ext4 image) gives the reader ENOSPC and leaves no partial file")
    func fullLocalDiskGivesENOSPC() async throws {
        let s = try RealName.sandbox("realNameENOSPC", image: "ext4", megabytes: 32)
        defer { s.finish() }
        let d = s.daemon
        try PlaceholderFiles.writeBig(d.cloud + "/big.bin", megabytes: 48, seed: 7)
        try await d.start()
        try await d.eventually("the real-name placeholder") { RealName.isNotDownloaded(d, "big.bin") }
        let free = FreeSpace.bytes(at: d.local)
        let read = RealName.shell(#"cat "$1" > /dev/null"#, [d.local + "/big.bin"])
        #expect(read.status != 0 && read.output.contains("No space left on device"), "cat of big.bin: \(read)")
        #expect(RealName.isNotDownloaded(d, "big.bin") == nil, "after ENOSPC: \(RealName.isNotDownloaded(d, "big.bin") ?? "")")
        #expect(PlaceholderFiles.temporaryFiles(d.local).isEmpty, "\(PlaceholderFiles.temporaryFiles(d.local))")
        try await d.eventually("the space of the failed fill to be free again") {
            FreeSpace.bytes(at: d.local) >= free - (1 << 20) ? nil : "\(FreeSpace.bytes(at: d.local)) bytes free, \(free) before"
        }
        try await d.stop()
    }

    @Test("twenty readers of one not-downloaded 50 MB file share one copy: the cloud copy is opened as often as for one reader")
    func twentyReadersShareOneCopy() async throws {
        let s = try RealName.sandbox("realNameShared")
        defer { s.finish() }
        let d = s.daemon
        try PlaceholderFiles.writeBig(d.cloud + "/one.bin", megabytes: 50, seed: 1)
        try PlaceholderFiles.writeBig(d.cloud + "/shared.bin", megabytes: 50, seed: 2)
        try await d.start()
        try await d.eventually("the real-name placeholders") {
            RealName.isNotDownloaded(d, "one.bin") ?? RealName.isNotDownloaded(d, "shared.bin")
        }
        let alone = try OpenCounter(d.cloud + "/one.bin")
        #expect(RealName.shell(#"cat "$1" > /dev/null"#, [d.local + "/one.bin"]).status == 0)
        try await d.settle("one")
        let opensForOne = alone.take()
        #expect(opensForOne >= 1, "the cloud copy of one.bin was never opened, yet its reader succeeded")

        let shared = try OpenCounter(d.cloud + "/shared.bin")
        let readers = try (0..<20).map { index in
            try BackgroundProcess("/bin/sh", ["-c", #"cat "$1" > "$2""#, "sh", d.local + "/shared.bin", s.root + "/out-\(index)"],
                                   scratch: s.root)
        }
        defer { readers.forEach { $0.stop() } }
        for reader in readers { try await reader.waitForExit(timeout: .seconds(120)) }
        for (index, reader) in readers.enumerated() {
            #expect(reader.status == 0, "reader \(index): \(reader.output)")
            #expect(PlaceholderFiles.same(s.root + "/out-\(index)", d.cloud + "/shared.bin"), "reader \(index) did not get the cloud's bytes")
        }
        try await d.settle("shared")
        #expect(shared.take() == opensForOne, "twenty readers opened the cloud copy other than one reader did (\(opensForOne) times)")
        try await d.stop()
    }

    @Test("an indexer (a cat named tracker-miner-fs-3) is refused with EPERM while cat is served; beyond open-rate-limit opens get EAGAIN")
    func indexersAndStormsAreRefused() async throws {
        let s = try RealName.sandbox("realNameRefusals")
        defer { s.finish() }
        let d = s.daemon
        d.config["placeholders"]?["open-rate-limit"] = "3"
        for index in 0..<5 { try PlaceholderFiles.write(d.cloud + "/f\(index).txt", RealName.content(4096, seed: UInt64(index))) }
        try await d.start()
        try await d.eventually("the real-name placeholders") { (0..<5).lazy.compactMap { RealName.isNotDownloaded(d, "f\($0).txt") }.first }

        let indexer = try s.sandbox.folder("bin") + "/tracker-miner-fs-3"
        try #require(SyncHarness.run(SyncHarness.tool("cp"), [SyncHarness.tool("cat"), indexer]).status == 0)
        let mark = d.logMark
        let refused = RealName.shell(#""$1" "$2""#, [indexer, d.local + "/f0.txt"])
        #expect(refused.status != 0 && refused.output.contains("Operation not permitted"), "the indexer: \(refused)")
        #expect(RealName.isNotDownloaded(d, "f0.txt") == nil, "the indexer's open fetched f0.txt")
        let served = RealName.shell(#"cat "$1" > "$2""#, [d.local + "/f0.txt", s.root + "/f0"])
        #expect(served.status == 0 && PlaceholderFiles.same(s.root + "/f0", d.cloud + "/f0.txt"), "cat after the indexer: \(served)")

        // Fills f0 (above), f1 and f2 are the three of the minute; f3 is refused, f4 too.
        for index in 1...2 {
            #expect(RealName.shell(#"cat "$1" > /dev/null"#, [d.local + "/f\(index).txt"]).status == 0, "f\(index).txt")
        }
        for index in 3...4 {
            let storm = RealName.shell(#"cat "$1""#, [d.local + "/f\(index).txt"])
            #expect(storm.status != 0 && storm.output.contains("Resource temporarily unavailable"), "f\(index).txt: \(storm)")
            #expect(RealName.isNotDownloaded(d, "f\(index).txt") == nil, "f\(index).txt after the refusal")
        }
        try await d.settle()
        #expect(d.logLines(containing: "open-rate-limit", since: mark).count == 1,
                "the storm is logged once: \(d.logLines(containing: "open-rate-limit", since: mark))")
        // /proc/PID/comm holds 15 bytes of the name.
        #expect(d.logLines(containing: "tracker-miner-f", since: mark).count == 1,
                "the refused indexer is logged once: \(d.logLines(containing: "tracker-miner-f", since: mark))")
        try await d.stop()
    }
}
