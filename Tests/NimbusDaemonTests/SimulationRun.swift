import Foundation
import NimbusVocabulary
import Synchronization
import Testing
import NimbusCore
import NimbusSimulation
import NimbusSystem
@testable import NimbusDaemon
import NimbusTestSupport

/// The whole engine on two in-memory filesystems with a manual clock: random edits on both
/// sides, some made while a copy runs, injected errors and simulated crashes. After every
/// pass no content may be lost, and once faults stop both sides must converge and a further
/// pass must change nothing.
struct SimulationRun {
    let seed: UInt64
    var random: SeededRandom
    let clock = ManualClock()
    let localDisk: MemoryFileSystem
    let cloudDisk: MemoryFileSystem
    let store = MemoryRecordStore()
    var local: FaultyFileSystem<MemoryFileSystem>
    var cloud: FaultyFileSystem<MemoryFileSystem>
    var engine: SyncEngine<FaultyFileSystem<MemoryFileSystem>>
    var counter = 0
    let userReplaced = ReplacedContents()
    /// On-demand mode: new cloud files become placeholders, and the user evicts and
    /// downloads at random.
    let onDemand: Bool
    /// How placeholders are written. A style joins the simulation once the executor carries
    /// it out: the naming (`names`), the check (`matchPlaceholders`) and the engine's settings
    /// follow this parameter.
    let style: PlaceholderStyle
    let names: [String]
    /// The kernel's hooks, in the real-name style.
    let marker: FakePlaceholderMarker?

    static let errors: [Errno] = [.ioError, .noSpace, .permissionDenied]

    init(seed: UInt64, onDemand: Bool = false, style: PlaceholderStyle = .suffix) {
        self.seed = seed
        self.onDemand = onDemand
        self.style = style
        // In the suffix style a cloud file may bear the name of another's placeholder.
        names = ["a", "b", "c.txt", "d"] + (onDemand && style.hasNameOfItsOwn ? ["a.nimbus"] : [])
        random = SeededRandom(seed: seed)
        localDisk = MemoryFileSystem(time: clock.timeSource, device: 1)
        cloudDisk = MemoryFileSystem(time: clock.timeSource, temporaryDirectory: RootMarkers.temporary(for: "sim"), device: 2)
        local = FaultyFileSystem(localDisk)
        cloud = FaultyFileSystem(cloudDisk)
        marker = style == .realName ? FakePlaceholderMarker(local: localDisk, cloud: cloudDisk) : nil
        engine = Self.makeEngine(local, cloud, store, clock, onDemand: onDemand, style: style, marker: marker)
    }

    static func makeEngine(_ local: FaultyFileSystem<MemoryFileSystem>, _ cloud: FaultyFileSystem<MemoryFileSystem>,
                           _ store: MemoryRecordStore, _ clock: ManualClock, onDemand: Bool,
                           style: PlaceholderStyle, marker: FakePlaceholderMarker?) -> SyncEngine<FaultyFileSystem<MemoryFileSystem>> {
        var settings = EngineSettings(deviceName: "sim")
        settings.batchThreshold = 4
        // One thread prepares the copies: MemoryFileSystem is thread-safe, but its inode numbers
        // (and a FaultyFileSystem's random draws) follow the order of calls, which must replay.
        settings.copyThreads = 1
        settings.onDemand = onDemand
        settings.placeholderStyle = style
        settings.minFreeSpace = 0
        let engine = SyncEngine(local: local, cloud: cloud, store: store, records: store.committed, clock: clock,
                                settings: settings, log: ProcessInfo.processInfo.environment["NIMBUS_SEED"] != nil ? Logger(threshold: .debug, journald: false) : .silent, rootNames: ("local", "cloud"))
        engine.marker = marker
        return engine
    }

    mutating func freshContent() -> [UInt8] {
        counter += 1
        return Array("s\(seed)-\(counter)".utf8)
    }

    mutating func randomPath(in disk: MemoryFileSystem) -> RelativePath {
        let dirs = [RelativePath.root] + disk.snapshot().filter {
            $0.value.metadata.kind == .directory && !$0.key.isRoot && !rp(".nimbus").contains($0.key) && $0.key.depth < 2
        }.map(\.key).sorted()
        let dir = dirs.randomElement(using: &random)!
        return try! dir.appending(name: Array(names.randomElement(using: &random)!.utf8))
    }

    mutating func existingPath(in disk: MemoryFileSystem) -> RelativePath? {
        disk.snapshot().keys.filter {
            !$0.isRoot && $0 != rp(".nimbus-root") && !rp(".nimbus").contains($0)
        }.sorted().randomElement(using: &random)
    }

    /// One edit as a user would make it; failures (a name already taken…) are just skipped.
    mutating func edit(_ disk: MemoryFileSystem) {
        let path = randomPath(in: disk)
        do {
            let choice = Int.random(in: 0..<10, using: &random)
            // Writing into a real-name placeholder opens it first: the listener fills it.
            if disk === localDisk, choice <= 2 { open(path) }
            switch choice {
            case 0, 1, 2: try disk.write(path, freshContent())
            case 3:
                if let p = existingPath(in: disk), try disk.metadata(of: p)?.kind == .file {
                    if disk === localDisk { open(p) }
                    try disk.append(p, freshContent())
                }
            case 4: try disk.makeDirectories(path)
            case 5: if let p = existingPath(in: disk) { try disk.removeRecursively(p) }
            case 6:
                // A placeholder is usually renamed as a placeholder (keeping `.nimbus`).
                guard let p = existingPath(in: disk), !p.contains(path) else { break }
                let keepsSuffix = Placeholder.target(of: p) != nil && ProcessInfo.processInfo.environment["NIMBUS_HOSTILE_RENAMES"] == nil
                try disk.rename(p, to: keepsSuffix ? Placeholder.file(for: path)! : path, replacing: false)
            case 7:
                // Modes that keep folders readable; unreadable folders have their own test.
                if let p = existingPath(in: disk), let kind = try disk.metadata(of: p)?.kind, kind != .symlink {
                    try disk.setAttributes(p, mode: kind == .directory ? 0o700 : 0o600, mtime: nil)
                }
            case 8: try disk.makeSymlink(path, target: freshContent())
            default:
                if let p = existingPath(in: disk), try disk.metadata(of: p)?.kind == .file {
                    if disk === localDisk { open(p) }
                    try disk.write(p, freshContent())
                }
            }
        } catch {}
        clock.advance(by: .milliseconds(1))
    }

    /// A program opens `path` here: a real-name placeholder is filled, and the engine told.
    func open(_ path: RelativePath) {
        if let outcome = marker?.open(path) { engine.applyHydration(outcome) }
    }

    var allContents: [String: [RelativePath]] {
        localDisk.contents().merging(cloudDisk.contents()) { $0 + $1 }
    }

    /// Content that must survive a pass: everything, except a synced (base) copy whose twin on
    /// the other side the user has since changed — the design lets that copy be replaced.
    func preciousContents() -> [String: [RelativePath]] {
        let records = engine.records
        var result: [String: [RelativePath]] = [:]
        for (side, disk, other) in [(Side.local, localDisk, cloudDisk), (.cloud, cloudDisk, localDisk)] {
            // Records by inode, so a synced file that was moved since is still recognised.
            let byInode = Dictionary(grouping: records, by: { $0.value.base[side].inode })
            for (content, paths) in disk.contents() {
                for path in paths {
                    let current = try? disk.metadata(of: path)
                    let replaceable = (current.flatMap { byInode[$0.inode] } ?? []).contains { recorded, record in
                        guard current!.isUnchanged(from: record.base[side]) else { return false }
                        let twin = try? other.metadata(of: recorded)
                        return twin == nil || !twin!.isUnchanged(from: record.base[side.other])
                    }
                    if replaceable { continue }
                    result[content, default: []].append(path)
                }
            }
        }
        return result
    }

    /// One engine pass, checking that every precious content held before is held after.
    mutating func pass(_ label: String) throws {
        let before = preciousContents()
        engine.sync(nil)
        let after = allContents
        let lost = Set(before.keys).subtracting(after.keys).subtracting(userReplaced.set.withLock { $0 })
        guard lost.isEmpty else {
            throw HarnessFailure("\(label): content lost: \(lost.sorted()) (was at \(lost.map { before[$0]! }))")
        }
    }

    /// A pass over a few paths only, as when events arrive in several batches: it may
    /// conclude less than a whole pass, never something a whole pass would not.
    mutating func partialPass(_ label: String) throws {
        let all = Set(localDisk.snapshot().keys).union(cloudDisk.snapshot().keys)
            .filter { !$0.isRoot && $0 != rp(".nimbus-root") && !rp(".nimbus").contains($0) }.sorted()
        var picked = Set<RelativePath>()
        for _ in 0..<Int.random(in: 1...2, using: &random) { if let path = all.randomElement(using: &random) { picked.insert(path) } }
        guard !picked.isEmpty else { return }
        let before = preciousContents()
        engine.sync(picked)
        let lost = Set(before.keys).subtracting(allContents.keys).subtracting(userReplaced.set.withLock { $0 })
        guard lost.isEmpty else {
            throw HarnessFailure("\(label): a pass over \(picked.sorted()) lost \(lost.sorted()) (was at \(lost.map { before[$0]! }))")
        }
    }

    mutating func crashAndRestart() {
        store.dropPending()
        marker?.restart()
        local = FaultyFileSystem(localDisk)
        cloud = FaultyFileSystem(cloudDisk)
        engine = Self.makeEngine(local, cloud, store, clock, onDemand: onDemand, style: style, marker: marker)
        engine.start()
    }

    mutating func run(steps: Int) throws {
        engine.start()
        for step in 0..<steps {
            for _ in 0..<Int.random(in: 0...3, using: &random) { edit(localDisk) }
            for _ in 0..<Int.random(in: 0...3, using: &random) { edit(cloudDisk) }
            if onDemand { try evictOrDownload(step) }
            let faults = Int.random(in: 0..<4, using: &random)
            if faults == 0 {
                local = FaultyFileSystem(localDisk, random: random, probabilities: [.prepareCopy: 0.2, .install: 0.2, .rename: 0.2, .removeFile: 0.2, .makeDirectory: 0.2], randomErrors: Self.errors)
                cloud = FaultyFileSystem(cloudDisk, random: random, probabilities: [.prepareCopy: 0.2, .install: 0.2, .rename: 0.2, .removeFile: 0.2, .makeDirectory: 0.2, .synchronize: 0.1], randomErrors: Self.errors)
                engine = Self.makeEngine(local, cloud, store, clock, onDemand: onDemand, style: style, marker: marker)
                _ = random.next()
            }
            if faults == 1 {
                // An edit on the other side while a copy is under way.
                let target = Bool.random(using: &random) ? localDisk : cloudDisk
                let victim = existingPath(in: target)
                let content = freshContent()
                let replaced = userReplaced
                target.duringCopy = { source, _ in
                    guard source == victim else { return }
                    // What the user overwrites is theirs to lose, not the engine's.
                    switch target.snapshot()[source]?.content {
                    case .file(let old)?: replaced.set.withLock { $0.insert("f:" + String(decoding: old, as: UTF8.self)) }
                    case .symlink(let old)?: replaced.set.withLock { $0.insert("l:" + String(decoding: old, as: UTF8.self)) }
                    default: break
                    }
                    try? target.write(source, content)
                }
            }
            if faults == 2 {
                let operations = Int.random(in: 0..<30, using: &random)
                (Bool.random(using: &random) ? local : cloud).crash(afterOperations: operations)
                try pass("step \(step) before crash")
                crashAndRestart()
                try pass("step \(step) after restart")
            } else {
                if onDemand && Bool.random(using: &random) { try partialPass("step \(step)") }
                try pass("step \(step)")
            }
            localDisk.duringCopy = nil
            cloudDisk.duringCopy = nil
            clock.advance(by: .seconds(10))
        }
        // Faults stop: the pair must settle.
        local.removeAllFaults()
        cloud.removeAllFaults()
        crashAndRestart()
        for settle in 0..<3 { try pass("settling \(settle)") }
        // What the deletions kept for the mass-delete guard goes once its window has passed.
        clock.advance(by: type(of: engine).deletionWindow)
        engine.releaseExpiredDeletions()
        var l = localDisk.syncedView(), c = cloudDisk.syncedView()
        try matchPlaceholders(&l, &c)
        guard l == c else {
            let differing = Set(l.keys).union(c.keys).filter { l[$0] != c[$0] }.sorted()
            throw HarnessFailure("not converged: \(differing.map { "\($0): \(l[$0] ?? "-") vs \(c[$0] ?? "-")" })")
        }
        let writes = store.writes
        try pass("idle")
        guard store.writes == writes else { throw HarnessFailure("a pass over a converged pair still changed the journal") }
        let temporaries = (localDisk.snapshot().keys.map { ("local", $0) } + cloudDisk.snapshot().keys.map { ("cloud", $0) })
            .filter { $0.1.components.contains(where: TemporaryName.isTemporary) }
        guard temporaries.isEmpty else { throw HarnessFailure("temporary files left: \(temporaries)") }
    }
}
