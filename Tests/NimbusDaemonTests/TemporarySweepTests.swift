import Foundation
import Glibc
import NimbusVocabulary
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
import NimbusTestSupport
@testable import NimbusDaemon

/// An engine over two real folders (file ages are real ctimes), its clock started at the real
/// time and moved by the test: leftover temporary files (issue 12 item 4).
final class DiskPair {
    let root: String
    let local: DiskFileSystem
    let cloud: DiskFileSystem
    let clock: ManualClock
    let engine: SyncEngine<DiskFileSystem>

    init(device: String = "laptop", settings: (inout EngineSettings) -> Void = { _ in }, log: Logger = .silent) throws {
        var template = Array("/tmp/nimbus-sweep-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else { throw HarnessFailure("mkdtemp failed: errno \(errno)") }
        root = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        for folder in ["local", "cloud"] {
            try FileManager.default.createDirectory(atPath: "\(root)/\(folder)", withIntermediateDirectories: true)
        }
        clock = ManualClock(start: ProcessSupport.wallClock)
        local = DiskFileSystem(root: SystemPath("\(root)/local"), protectsOpenWriters: true)
        cloud = DiskFileSystem(root: SystemPath("\(root)/cloud"), temporaryDirectory: RootMarkers.temporary(for: device))
        var engineSettings = EngineSettings(deviceName: device)
        settings(&engineSettings)
        engine = SyncEngine(local: local, cloud: cloud, store: MemoryRecordStore(), records: [:], clock: clock,
                            settings: engineSettings, log: log, rootNames: ("L", "C"))
    }

    deinit { _ = try? FileManager.default.removeItem(atPath: root) }

    /// Writes `relative` (below the pair's scratch folder: `local/…` or `cloud/…`), making its
    /// folders, and returns once no other process has it open. A child that another test forks
    /// while the file is being written inherits the descriptor until it execs, and under load
    /// that lasted until the sweep, which rightly left the file alone as open elsewhere.
    func plant(_ relative: String, _ text: String = "leftover") throws {
        let path = "\(root)/\(relative)"
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try waitUntilClosedElsewhere(relative)
    }

    /// Returns once no other process has `relative` (`local/…` or `cloud/…`) open: what a
    /// child forked by another test while it was written (by the test or by a sync) inherited
    /// is closed when the child execs, and a sync rightly leaves a file open for writing alone.
    func waitUntilClosedElsewhere(_ relative: String) throws {
        let parts = relative.split(separator: "/", maxSplits: 1).map(String.init)
        let side = parts[0] == "local" ? local : cloud
        try Polling.untilClosedElsewhere(rp(parts[1]), in: side)
    }

    func exists(_ relative: String) -> Bool { access("\(root)/\(relative)", F_OK) == 0 }
}

@Suite struct TemporarySweepTests {
    static let minute: Duration = .minutes(1)

    /// Before, a running daemon removed leftover temporaries only after one of its own local
    /// copies failed: one left by anything else stayed until the next start.
    @Test func theRunningDaemonSweepsOldCopyTemporariesButNoOpenOneAndNoApplications() throws {
        let pair = try DiskPair()
        pair.engine.start()
        let copy = "local/d/.nimbus-tmp-0123456789abcdef"
        let open = "local/.nimbus-tmp-fedcba9876543210"
        let application = "local/.nimbus-tmp-write-report"
        let cloudCopy = "cloud/.nimbus/tmp/laptop/.nimbus-tmp-00000000000000aa"
        for path in [copy, open, application, cloudCopy] { try pair.plant(path) }
        let writer = Glibc.open("\(pair.root)/\(open)", O_WRONLY | O_APPEND)
        #expect(writer >= 0)
        defer { close(writer) }

        pair.clock.advance(by: Self.minute)
        pair.engine.sync(nil)
        #expect(pair.exists(copy) && pair.exists(cloudCopy), "not due yet, and too young anyway")

        pair.clock.advance(by: Self.minute * 15)
        pair.engine.sync(nil)
        #expect(!pair.exists(copy), "an old copy temporary in the local folder is swept")
        #expect(!pair.exists(cloudCopy), "an old temporary of this device's in the cloud is swept")
        #expect(pair.exists(open), "a temporary some program has open is left alone")
        #expect(pair.exists(application), "an application's coordinated write is not a copy's temporary")
        #expect(pair.exists("local/d"))
    }

    /// A temporary written moments ago may be a copy in flight elsewhere (a hydration): the
    /// sweep leaves it until it is old.
    @Test func aYoungTemporaryIsLeftUntilItIsOld() throws {
        let pair = try DiskPair()
        pair.engine.start()
        pair.clock.advance(by: Self.minute * 6)
        let copy = "local/.nimbus-tmp-0123456789abcdef"
        try pair.plant(copy)
        pair.engine.sync(nil)
        #expect(pair.exists(copy))
        pair.clock.advance(by: Self.minute * 11)
        pair.engine.sync(nil)
        #expect(!pair.exists(copy))
    }

    /// Before, every device's start removed every temporary in the shared `.nimbus/tmp`,
    /// including the upload another machine was making at that moment.
    @Test func aStartRemovesItsOwnCloudTemporariesAndOthersOnlyWhenStale() throws {
        let pair = try DiskPair(device: "laptop")
        let own = "cloud/.nimbus/tmp/laptop/.nimbus-tmp-0000000000000001"
        let inFlight = "cloud/.nimbus/tmp/phone/.nimbus-tmp-0000000000000002"
        let abandoned = "cloud/.nimbus/tmp/tablet/.nimbus-tmp-0000000000000003"
        let older = "cloud/.nimbus/tmp/.nimbus-tmp-0000000000000004"
        for path in [own, inFlight, abandoned, older] { try pair.plant(path) }
        // The tablet's daemon is long gone: its folder and its file have not changed for 7 hours.
        for path in [".nimbus/tmp/tablet/.nimbus-tmp-0000000000000003", ".nimbus/tmp/tablet"] {
            try pair.cloud.setAttributes(RelativePath(validating: path), mode: nil,
                                         mtime: (pair.clock.wallNow - .hours(7)).nanoseconds)
        }

        pair.engine.start()
        #expect(!pair.exists(own), "this device's own leftovers go at its start")
        #expect(pair.exists(inFlight), "another device's copy in flight stays")
        #expect(!pair.exists(abandoned), "a device's leftovers go once its folder is stale")
        #expect(pair.exists(older), "the shared folder changed just now: a device without a folder of its own may be copying")
        if case .halted(let why) = pair.engine.status.phase { Issue.record("the pair halted: \(why)") }
    }

    /// A copy in flight need not change its device's folder itself: a long copy writes only its
    /// file, and a folder uploaded as a unit fills a staging folder below it. Before, another
    /// device's start removed such a copy once the folder's own time was 7 hours old.
    @Test func anotherDevicesCopyStillBeingWrittenStaysThoughItsFolderIsOld() throws {
        let pair = try DiskPair(device: "laptop")
        let longCopy = "cloud/.nimbus/tmp/phone/.nimbus-tmp-0000000000000005"
        let staged = "cloud/.nimbus/tmp/tablet/.nimbus-tmp-0000000000000006/photos/new.jpg"
        for path in [longCopy, staged] { try pair.plant(path) }
        let sevenHoursAgo = (pair.clock.wallNow - .hours(7)).nanoseconds
        for folder in [".nimbus/tmp/phone", ".nimbus/tmp/tablet", ".nimbus/tmp/tablet/.nimbus-tmp-0000000000000006"] {
            try pair.cloud.setAttributes(RelativePath(validating: folder), mode: nil, mtime: sevenHoursAgo)
        }

        pair.engine.start()
        #expect(pair.exists(longCopy), "a copy written just now stays, though its folder is 7 hours old")
        #expect(pair.exists(staged), "a staged upload filled just now stays, though its folders are 7 hours old")

        // Once nothing in the folder has changed for 7 hours either, it goes.
        try pair.cloud.setAttributes(RelativePath(validating: ".nimbus/tmp/phone/.nimbus-tmp-0000000000000005"), mode: nil,
                                     mtime: sevenHoursAgo)
        try pair.cloud.setAttributes(RelativePath(validating: ".nimbus/tmp/phone"), mode: nil, mtime: sevenHoursAgo)
        pair.engine.removeTemporariesAtStart()  // What the next start does.
        #expect(!pair.exists(longCopy), "a copy untouched for 7 hours is a leftover")
        #expect(pair.exists(staged))
    }
}
