import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
import NimbusTestSupport
import NimbusVocabulary
@testable import NimbusDaemon

/// The events of a folder the engine uploaded whole (`SyncEngine+Staging`): its rename into
/// place, what the watcher then finds inside it, and its mode set after, bring no pass over
/// it, unless something inside is not what the journal recorded (`SyncEngine+Echoes`).
@Suite struct OwnEchoTests {
    static let files = ["d/a", "d/b", "d/e/c"]

    /// A runtime whose first pass synced `d` from `side` (uploaded whole, or downloaded: the
    /// folders made in the local folder, each file installed from its temporary file), paused:
    /// it takes events in and starts no pass, so its batcher shows the hints the events left.
    static func synced(from side: Side) throws -> MemoryRuntime {
        let pair = MemoryRuntime()
        let (source, destination) = side == .local ? (pair.local, pair.cloud) : (pair.cloud, pair.local)
        for path in files { try source.write(rp(path), "content of \(path)") }
        pair.clock.advance(by: .seconds(1))  // Written well before the pass, as a user's files usually are.
        pair.runtime.engine.settings.batchThreshold = 2  // Folders are uploaded whole by batches only.
        pair.runtime.begin()
        #expect(pair.runtime.step())
        for path in files { #expect(pair.content(destination, path) == "content of \(path)", "\(path) is synced") }
        pair.runtime.setPaused(true)
        return pair
    }

    static func uploaded() throws -> MemoryRuntime { try synced(from: .local) }

    /// What inotify reports for the upload of `d`: the rename from `.nimbus/tmp` (not
    /// watched), then each entry the watcher finds as it watches the folder, then the mode.
    static var echoes: [WatchEvent] {
        [WatchEvent(.movedTo(cookie: 7), rp("d"), isDirectory: true), WatchEvent(.created, rp("d/e"), isDirectory: true)]
            + files.map { WatchEvent(.created, rp($0), isDirectory: false) }
            + [WatchEvent(.attributesChanged, rp("d"), isDirectory: true)]
    }

    /// The paths the runtime will look at after `events`, besides `sentinel`: an event pushed
    /// last that always leaves a hint, so that once there is one the whole push was taken in
    /// (a push is taken in at once).
    static func hints(after events: [WatchEvent], _ pair: MemoryRuntime, on side: Side = .cloud) throws -> Set<RelativePath> {
        let runtime = pair.runtime
        pair.watcher(side)?.push(events + [WatchEvent(.created, sentinel, isDirectory: false)])
        try pair.stepUntil("the events are taken in") { runtime.batcher.batcher.nextDeadline != nil }
        pair.clock.advance(by: runtime.options.quietPeriod * 2)
        guard case .paths(let paths) = runtime.batcher.batcher.take(now: pair.clock.monotonicNow), paths.contains(sentinel) else {
            Issue.record("the batch holds no hint of the sentinel")
            return []
        }
        return paths.subtracting([sentinel])
    }

    static let sentinel = rp("sentinel")

    @Test func theEchoesOfAFolderUploadedWholeBringNoPass() throws {
        let pair = try Self.uploaded()
        defer { pair.runtime.finish() }
        let hints = try Self.hints(after: Self.echoes, pair)
        #expect(hints.isEmpty, "\(hints)")
    }

    @Test func aFileChangedInsideItMeanwhileIsLookedAt() throws {
        let pair = try Self.uploaded()
        defer { pair.runtime.finish() }
        try pair.cloud.write(rp("d/e/c"), "another device's")
        try pair.cloud.write(rp("d/new"), "made in it at once")
        let events = Self.echoes + [WatchEvent(.created, rp("d/new"), isDirectory: false)]
        #expect(try Self.hints(after: events, pair) == [rp("d/e/c"), rp("d/new")])
    }

    /// A folder moved into the cloud folder by someone else is looked at whole, as before.
    @Test func aFolderNotOursIsLookedAtWhole() throws {
        let pair = try Self.uploaded()
        defer { pair.runtime.finish() }
        try pair.cloud.write(rp("other/x"), "from elsewhere")
        let events = [WatchEvent(.movedTo(cookie: 9), rp("other"), isDirectory: true),
                      WatchEvent(.created, rp("other/x"), isDirectory: false)]
        #expect(try Self.hints(after: events, pair) == [rp("other")])
    }

    /// A pass begun since forgets the echoes: the same events then are someone else's.
    @Test func aLaterPassForgetsTheEchoes() throws {
        let pair = try Self.uploaded()
        defer { pair.runtime.finish() }
        pair.runtime.engine.sync([rp("unrelated")])
        #expect(try Self.hints(after: Self.echoes, pair) == [rp("d")])
    }

    /// What inotify reports in the local folder for that download: each folder made, what the
    /// watcher finds in it as it watches it, each file renamed from its temporary file (whose
    /// own name is never reported).
    static var downloadEchoes: [WatchEvent] {
        [WatchEvent(.created, rp("d"), isDirectory: true), WatchEvent(.created, rp("d/e"), isDirectory: true),
         WatchEvent(.created, rp("d/a"), isDirectory: false)]
            + files.map { WatchEvent(.movedTo(cookie: 3), rp($0), isDirectory: false) }
    }

    @Test func theEchoesOfADownloadBringNoPass() throws {
        let pair = try Self.synced(from: .cloud)
        defer { pair.runtime.finish() }
        let hints = try Self.hints(after: Self.downloadEchoes, pair, on: .local)
        #expect(hints.isEmpty, "\(hints)")
    }

    @Test func aDownloadedFileTheUserChangedMeanwhileIsLookedAt() throws {
        let pair = try Self.synced(from: .cloud)
        defer { pair.runtime.finish() }
        try pair.local.write(rp("d/e/c"), "the user's edit, longer than before")
        #expect(try Self.hints(after: Self.downloadEchoes, pair, on: .local) == [rp("d/e/c")])
    }
}
