import Foundation
import Glibc
import Synchronization
import Testing
import NimbusSimulation
import NimbusSystem
import NimbusTestSupport
@testable import NimbusDaemon

/// What stays the same is logged once, not at every pass that looks at it: a special file
/// (a fifo beside a file saved every few seconds was logged at each save), a file that cannot
/// be read (logged as an error at each retry, and at each pass over its folder). Told again
/// when it changes, comes back after it was gone (or synced), or the daemon starts again.
@Suite struct LogRepetitionTests {
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

    @Test func anUnreadableFileIsToldOnceUntilItSyncs() throws {
        let lines = Lines()
        let pair = Pair(log: lines.logger)
        try pair.local.writeFile(rp("secret.txt"), contents: Array("secret".utf8), mode: 0o200)
        pair.engine.start()
        for _ in 0..<5 {
            pair.clock.advance(by: .minutes(5))  // every retry due
            pair.engine.sync(pair.engine.dueRetries())
            pair.engine.sync(nil)
        }
        #expect(lines.count("cannot open secret.txt") == 1 + lines.count("again: cannot open secret.txt"),
                "\(lines.all.withLock { $0 })")
        #expect(lines.count("again: cannot open secret.txt") >= 10, "each try is still in the debug log")
        #expect(pair.engine.status.lastError?.contains("secret.txt") == true, "status still tells it")

        // Readable: it syncs; unreadable again later: a new failure, told again.
        try pair.local.setAttributes(rp("secret.txt"), mode: 0o600, mtime: nil)
        pair.sync()
        #expect(pair.content(pair.cloud, "secret.txt") == "secret")
        try pair.local.writeFile(rp("secret.txt"), contents: Array("changed".utf8), mode: 0o200)
        pair.sync()
        pair.sync()
        #expect(lines.count("cannot open secret.txt") - lines.count("again: cannot open secret.txt") == 2, "\(lines.all.withLock { $0 })")
    }

    @Test func anUnreadableFolderIsToldOnceUntilItIsReadAgain() throws {
        let lines = Lines()
        let pair = Pair(log: lines.logger)
        try pair.local.write(rp("d/a.txt"), Array("a".utf8))
        pair.engine.start()
        try pair.local.setAttributes(rp("d"), mode: 0o000, mtime: nil)
        for _ in 0..<4 {
            pair.sync()
            pair.engine.sync([rp("d")])
        }
        // Listed inside the root ("cannot read d"), or scanned as a scope root ("cannot scan d").
        let said = { lines.all.withLock { $0.filter { $0.contains(" d in the local folder") } } }
        let told = { said().filter { !$0.hasPrefix("again: ") }.count }
        #expect(told() == 1, "\(said())")
        #expect(said().count >= 8, "each pass still says it at debug level: \(said())")
        try pair.local.setAttributes(rp("d"), mode: 0o755, mtime: nil)
        pair.sync()
        try pair.local.setAttributes(rp("d"), mode: 0o000, mtime: nil)
        pair.sync()
        #expect(told() == 2, "unreadable again after it was read: told again")
        #expect(pair.content(pair.cloud, "d/a.txt") == "a", "the cloud copy survives")
    }

    /// A file whose copy failed, then deleted: nothing is left in error (status said "1 file
    /// failed to sync" and exited 1, with nothing to list or fix, until a restart).
    @Test func theErrorOfAFileGoneFromBothFoldersIsForgotten() throws {
        let pair = Pair()
        try pair.local.writeFile(rp("secret.txt"), contents: Array("secret".utf8), mode: 0o200)
        try pair.local.writeFile(rp("other.txt"), contents: Array("other".utf8), mode: 0o200)
        pair.engine.start()
        #expect(pair.engine.errorCount == 2)
        try pair.local.removeFile(rp("secret.txt"))
        pair.sync()
        #expect(pair.engine.errorCount == 1, "other.txt is still unreadable, secret.txt is gone")
        pair.engine.sync([rp("other.txt")])
        #expect(pair.engine.errorCount == 1)
    }
}
