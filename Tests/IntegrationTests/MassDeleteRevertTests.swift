import Foundation
import NimbusTestTraits
import Testing

/// `nimbusctl revert-deletes` on the real daemon undoes a mass deletion as a whole (DESIGN §3),
/// including the part applied before the guard held the rest: the `rm` that stalled under
/// load and reached the daemon in two batches, the first under the limit.
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(3)))
struct MassDeleteRevertTests {
    static func name(_ folder: Int, _ file: Int) -> String { "d\(folder)/f\(file).txt" }
    static func content(_ folder: Int, _ file: Int) -> String { "file d\(folder)/f\(file)\n" }
    static let all = (0..<3).flatMap { d in (0..<100).map { (d, $0) } }
    /// All of `d0` and 30 files of `d1`: 131 of the 303 synced entries, under half.
    static func inFirstPart(_ folder: Int, _ file: Int) -> Bool { folder == 0 || (folder == 1 && file < 30) }

    @Test("revert-deletes brings back the part of a mass deletion applied before the guard held the rest",
          arguments: SyncDirection.allCases)
    func revertUndoesTheWholeMassDeletion(_ direction: SyncDirection) async throws {
        let (sandbox, daemon, src, dst) = try direction.sandbox("revertWholeMassDeletion")
        defer { sandbox.finish() }
        for d in 0..<3 { try SyncFiles.makeDirectory(SyncFiles.join(src, "d\(d)")) }
        for (d, f) in Self.all { try SyncFiles.write(SyncFiles.join(src, Self.name(d, f)), Array(Self.content(d, f).utf8)) }
        try await daemon.start()
        try await sandbox.converge("first sync of 300 files", src, dst, timeout: .seconds(60)) {
            let count = try SyncTree(scanning: dst).fileCount
            return count == 300 ? nil : "\(count) of 300 files in \(dst)"
        }

        // The first part is applied: under the limit.
        for (d, f) in Self.all where Self.inFirstPart(d, f) { try SyncFiles.remove(SyncFiles.join(src, Self.name(d, f))) }
        try SyncFiles.removeDirectory(SyncFiles.join(src, "d0"))
        try await sandbox.eventually("the first 131 deletions applied in \(dst)", timeout: .seconds(60)) {
            let left = Self.all.filter { Self.inFirstPart($0.0, $0.1) && SyncFiles.exists(SyncFiles.join(dst, Self.name($0.0, $0.1))) }
            return left.isEmpty && !SyncFiles.exists(SyncFiles.join(dst, "d0")) ? nil : "\(left.count) still there"
        }

        // The rest comes at once: it is held, and the first part, applied less than the
        // guard's window ago (45 s, longer than the longest the event batcher waits for the
        // end of an `rm`, 30 s), counts and is kept.
        let mark = daemon.logMark
        for (d, f) in Self.all where !Self.inFirstPart(d, f) { try SyncFiles.remove(SyncFiles.join(src, Self.name(d, f))) }
        for d in 1..<3 { try SyncFiles.removeDirectory(SyncFiles.join(src, "d\(d)")) }
        let line = try await daemon.waitForLog("holding", since: mark, timeout: .seconds(60))
        print("[revertWholeMassDeletion-\(direction)] \(line)")
        #expect(line.contains("131 deletion(s) of the same kind applied there"), "the log does not say that the first part is kept: \(line)")
        #expect(try SyncTree(scanning: dst).fileCount == 170, "the held deletions reached \(dst)")
        let status = daemon.controlJSON(["status"])
        #expect(status.object?["heldDeletes"] as? Int == 172 && status.object?["keptDeletes"] as? Int == 131,
                "nimbusctl --json status does not tell the held and the kept deletions: \(status.output)")
        let shown = daemon.control(["status"]).output
        #expect(shown.contains("172 deletions held by the safety guard, and 131 deletions of the same kind applied just before"), "\(shown)")

        let revert = daemon.control(["revert-deletes"])
        #expect(revert.status == 0, "nimbusctl revert-deletes exited \(revert.status): \(revert.output)")
        try await sandbox.converge("every deleted file back on both sides", src, dst, timeout: .seconds(60)) {
            let missing = Self.all.filter { d, f in
                [src, dst].contains { (try? SyncFiles.text(SyncFiles.join($0, Self.name(d, f)))) != Self.content(d, f) }
            }
            return missing.isEmpty ? nil : "\(missing.count) files not back, e.g. \(missing.prefix(3).map { Self.name($0.0, $0.1) })"
        }
        #expect(!SyncFiles.exists(SyncFiles.join(daemon.local, String(decoding: SyncFiles.deletedHolding, as: UTF8.self))),
                "the holding folder is left behind in \(daemon.local)")
        try await daemon.stop()
    }
}
