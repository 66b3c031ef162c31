import Foundation
import Glibc
import Synchronization
import Testing
import NimbusCore
import NimbusSystem
import NimbusVocabulary
@testable import NimbusDaemon

/// A folder new in the cloud is built in a staging folder and published with one rename
/// (issue 15): every file and folder arrives as a per-file install would leave it, a folder
/// another device makes meanwhile keeps its files and ours, and a staging folder left by a
/// crash goes at the next start.
@Suite struct StagedUploadTests {
    /// Nested new folders with files of several modes and nanosecond mtimes, an empty folder,
    /// a file at the top; folder times set last, as a user's tree has them.
    static let files = (0..<40).map { index in
        (path: ["a", "a/b", "a/b/c", "d", "d/e"][index % 5] + "/file\(index)", mode: [0o644, 0o600, 0o755, 0o640][index % 4])
    } + [(path: "top", mode: 0o644)]
    static let folders = ["a", "a/b", "a/b/c", "d", "d/e", "empty", "empty/inner"]

    static func mtime(_ index: Int) -> Int64 { 1_700_000_000_123_456_789 + Int64(index) * 1_000_000_007 }

    static func plantTree(in pair: DiskPair) throws {
        for folder in folders { try FileManager.default.createDirectory(atPath: "\(pair.root)/local/\(folder)", withIntermediateDirectories: true) }
        for (index, file) in files.enumerated() {
            try pair.plant("local/\(file.path)", "content of \(file.path)")
            try pair.local.setAttributes(rp(file.path), mode: UInt32(file.mode), mtime: mtime(index))
        }
        try pair.local.setAttributes(rp("a/b"), mode: 0o750, mtime: nil)
        for (index, folder) in folders.enumerated().reversed() {
            try pair.local.setAttributes(rp(folder), mode: nil, mtime: mtime(100 + index))
        }
    }

    /// What remains in this device's folder of temporaries: staging folders included.
    static func temporaries(_ pair: DiskPair) throws -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: "\(pair.root)/cloud/.nimbus/tmp/laptop")) ?? []
    }

    @Test func aFirstSyncOfNewNestedFoldersLandsEveryFileAndFolderAsTheyAre() throws {
        let pair = try DiskPair()
        try Self.plantTree(in: pair)
        // Until it is published, nobody (another device, a program) sees a half-uploaded folder.
        let visibleEarly = Mutex<[String]>([])
        let cloudRoot = "\(pair.root)/cloud"
        pair.engine.onEvent { event in
            guard case .stateChanged(let path, .uploading) = event, path.depth > 1 else { return }
            let top = String(decoding: path.components[0], as: UTF8.self)
            if access("\(cloudRoot)/\(top)", F_OK) == 0 { visibleEarly.withLock { $0.append(path.description) } }
        }
        pair.engine.start()
        #expect(visibleEarly.withLock { $0 }.isEmpty, "folders seen in the cloud while their files were uploaded")
        for (index, file) in Self.files.enumerated() {
            let cloud = try #require(try pair.cloud.metadata(of: rp(file.path)), "\(file.path) uploaded")
            #expect(try pair.cloud.readFile(rp(file.path), limit: 1 << 10) == Array("content of \(file.path)".utf8))
            #expect(cloud.mode == UInt32(file.mode) && cloud.mtime == Self.mtime(index), "\(file.path): \(cloud)")
            #expect(pair.engine.entry(rp(file.path))?.state == .downloaded, "\(file.path) is in sync")
        }
        for folder in Self.folders {
            let local = try #require(try pair.local.metadata(of: rp(folder)))
            let cloud = try #require(try pair.cloud.metadata(of: rp(folder)), "\(folder) made")
            #expect(cloud.kind == .directory && cloud.mode == local.mode && cloud.mtime == local.mtime, "\(folder): \(cloud)")
        }
        #expect(try Self.temporaries(pair).isEmpty, "no staging folder is left")
        // The records are those of what was written: the next pass has nothing to copy.
        let copied = pair.engine.status.filesCopied
        #expect(copied == Self.files.count)
        pair.engine.sync(nil)
        #expect(pair.engine.status.filesCopied == copied)
        if case .halted(let why) = pair.engine.status.phase { Issue.record("the pair halted: \(why)") }
    }

    /// Another device makes the same folder in the cloud while ours is being staged, with a
    /// file of the same name and one of its own: the publish is refused, our files are put
    /// there one by one, and neither device's file is overwritten (the same name becomes a
    /// conflict, kept on both sides).
    @Test func aFolderAnotherDeviceMakesMeanwhileKeepsBothDevicesFiles() throws {
        let pair = try DiskPair()
        try Self.plantTree(in: pair)
        let theirs = Mutex(false)
        let madeEarly = Mutex(false)
        let cloud = "\(pair.root)/cloud"
        pair.engine.onEvent { event in
            guard case .stateChanged(let path, .uploading) = event, path == rp("d/e/file4") else { return }
            guard !theirs.withLock({ done in defer { done = true }; return done }) else { return }
            if access("\(cloud)/d", F_OK) == 0 { madeEarly.withLock { $0 = true } }
            try? FileManager.default.createDirectory(atPath: "\(cloud)/d/e", withIntermediateDirectories: true)
            try? Data("the other device's file4".utf8).write(to: URL(fileURLWithPath: "\(cloud)/d/e/file4"))
            try? Data("the other device's own file".utf8).write(to: URL(fileURLWithPath: "\(cloud)/d/theirs"))
        }
        pair.engine.start()
        #expect(theirs.withLock { $0 }, "the other device's folder was made during the staging")
        #expect(!madeEarly.withLock { $0 }, "our folder was being staged, not made in the cloud")
        // Copied down by the next pass, which would rightly leave them alone as mid-rewrite
        // while a child forked by another test still held them (`DiskPair.plant`).
        for file in ["cloud/d/e/file4", "cloud/d/theirs"] { try pair.waitUntilClosedElsewhere(file) }
        pair.engine.sync(nil)
        for (index, file) in Self.files.enumerated() where file.path != "d/e/file4" {
            #expect(try pair.cloud.readFile(rp(file.path), limit: 1 << 10) == Array("content of \(file.path)".utf8))
            #expect(try pair.cloud.metadata(of: rp(file.path))?.mtime == Self.mtime(index))
        }
        for side in ["local", "cloud"] {
            #expect(try String(contentsOfFile: "\(pair.root)/\(side)/d/theirs", encoding: .utf8) == "the other device's own file")
            let names = try FileManager.default.contentsOfDirectory(atPath: "\(pair.root)/\(side)/d/e")
            let versions = try names.filter { $0.hasPrefix("file4") }.map {
                try String(contentsOfFile: "\(pair.root)/\(side)/d/e/\($0)", encoding: .utf8)
            }
            #expect(Set(versions) == ["content of d/e/file4", "the other device's file4"], "\(side): \(names)")
        }
        #expect(try Self.temporaries(pair).isEmpty, "the staging folder is removed")
    }

    /// A daemon killed while staging leaves a staging folder (with folders, files and maybe a
    /// symlink in it): the next start removes it whole, following no symlink, and touches
    /// nothing named so outside the folder of temporaries.
    @Test func aStagingFolderLeftByACrashIsRemovedAtStart() throws {
        let pair = try DiskPair()
        let staging = "cloud/.nimbus/tmp/laptop/.nimbus-tmp-00000000000000c1"
        try pair.plant("\(staging)/file", "half a folder")
        try pair.plant("\(staging)/sub/deeper/file", "more")
        try pair.plant("local/keep/precious", "the user's")
        #expect(symlink("\(pair.root)/local/keep", "\(pair.root)/\(staging)/sub/link") == 0)
        let lookalike = "local/.nimbus-tmp-00000000000000c2/notes"
        try pair.plant(lookalike, "a user's folder that happens to look like a staging folder")

        pair.engine.start()
        #expect(!pair.exists(staging), "the staging folder goes at start, with everything in it")
        #expect(pair.exists("local/keep/precious") && pair.exists("cloud/keep/precious"), "the symlink was not followed")
        #expect(pair.exists(lookalike), "only the folder of temporaries holds staging folders")
        if case .halted(let why) = pair.engine.status.phase { Issue.record("the pair halted: \(why)") }
    }
}
