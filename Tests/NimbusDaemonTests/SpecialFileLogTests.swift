import Foundation
import Glibc
import Synchronization
import Testing
import NimbusSimulation
import NimbusSystem
import NimbusTestSupport
@testable import NimbusDaemon

/// A special file is skipped with one line in the log, not one at every pass that looks at
/// its folder (a fifo beside a file saved every few seconds was logged at each save): told
/// again only when it changes, comes back after it was gone, or the daemon starts again.
@Suite struct SpecialFileLogTests {
    final class Lines: Sendable {
        let all = Mutex<[String]>([])
        var logger: Logger { Logger(threshold: .debug) { [self] _, message in all.withLock { $0.append(message) } } }
        func count(_ text: String) -> Int { all.withLock { $0.filter { $0.contains(text) }.count } }
    }

    static func makeFifo(_ path: String) throws {
        guard mkfifo(path, 0o644) == 0 else { throw HarnessFailure("mkfifo \(path): errno \(errno)") }
    }

    @Test func aFifoIsToldOnceUntilItChanges() throws {
        let lines = Lines()
        let pair = try DiskPair(log: lines.logger)
        try Self.makeFifo(pair.root + "/local/pipe")
        try Self.makeFifo(pair.root + "/cloud/cloud-pipe")
        try pair.plant("local/a.txt", "a")
        pair.engine.start()
        for round in 0..<3 {
            try pair.plant("local/a.txt", "saved \(round)")
            pair.engine.sync(nil)
            pair.engine.sync([rp("pipe"), rp("cloud-pipe")])
        }
        #expect(lines.count("skipping pipe:") == 1, "\(lines.all.withLock { $0 })")
        #expect(lines.count("skipping cloud-pipe:") == 1)
        #expect(!pair.exists("cloud/pipe") && !pair.exists("local/cloud-pipe"), "special files are never synced")

        // Gone and back: told again, once.
        try FileManager.default.removeItem(atPath: pair.root + "/local/pipe")
        pair.engine.sync(nil)
        try Self.makeFifo(pair.root + "/local/pipe")
        pair.engine.sync(nil)
        pair.engine.sync(nil)
        #expect(lines.count("skipping pipe:") == 2)

        // A fifo of the same name on the other side too: a change, told once.
        try Self.makeFifo(pair.root + "/cloud/pipe")
        pair.engine.sync(nil)
        pair.engine.sync(nil)
        #expect(lines.count("skipping pipe:") == 3)

        // A restart tells again what is there.
        let restarted = SyncEngine(local: pair.local, cloud: pair.cloud, store: MemoryRecordStore(), records: pair.engine.records,
                                   clock: pair.clock, settings: pair.engine.settings, log: lines.logger, rootNames: ("L", "C"))
        restarted.start()
        restarted.sync(nil)
        #expect(lines.count("skipping pipe:") == 4 && lines.count("skipping cloud-pipe:") == 2, "\(lines.all.withLock { $0 })")
    }
}
