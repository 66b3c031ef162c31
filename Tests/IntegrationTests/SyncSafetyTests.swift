import Foundation
import Glibc
import NimbusTestTraits
import Testing

/// The safety rules of DESIGN §3 and §4 on the real daemon: conflicts keep both versions, mass
/// deletes are held, a root without its marker is never read as "everything was deleted", and
/// two daemons can share one cloud folder.
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(3)))
struct SyncSafetyTests {

    /// The names in `root` (top level) that are conflict copies of `stem.ext` made by `device`.
    static func conflictCopies(in root: String, stem: String, ext: String, device: String? = nil) throws -> [String] {
        let prefix = "\(stem) (conflict from \(device.map { $0 + " " } ?? "")"
        return try SyncFiles.names(in: root).filter { $0.hasPrefix(prefix) && $0.hasSuffix(").\(ext)") }.sorted()
    }

    @Test("edits on both sides while stopped end as a conflict with both contents kept")
    func conflictWhileStopped() async throws {
        let sandbox = try SyncSandbox("conflictWhileStopped")
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: "alpha")
        let local = daemon.local, cloud = daemon.cloud
        try SyncFiles.write(SyncFiles.join(local, "doc.txt"), Array("original\n".utf8))
        try await daemon.start()
        try await sandbox.converge("first sync", local, cloud) { try SyncExpect.file(cloud, "doc.txt", "original\n") }
        try await daemon.stop()

        try SyncFiles.write(SyncFiles.join(local, "doc.txt"), Array("edited here, on alpha\n".utf8))
        try SyncFiles.write(SyncFiles.join(cloud, "doc.txt"), Array("edited in the cloud\n".utf8))
        try await daemon.start()
        try await sandbox.converge("conflict resolved into two files", local, cloud) {
            let copies = try Self.conflictCopies(in: local, stem: "doc", ext: "txt", device: "alpha")
            guard copies.count == 1 else { return "expected one 'doc (conflict from alpha …).txt' in \(local), found \(copies)" }
            return try SyncExpect.all(SyncExpect.file(local, "doc.txt", "edited in the cloud\n"), SyncExpect.file(cloud, "doc.txt", "edited in the cloud\n"),
                             SyncExpect.file(local, copies[0], "edited here, on alpha\n"), SyncExpect.file(cloud, copies[0], "edited here, on alpha\n"))
        }
        let info = daemon.controlJSON(["info", "doc.txt"])
        #expect(info.object?["state"] as? String == "conflict", "nimbusctl info doc.txt does not show the conflict: \(info.output)")
        let name = try Self.conflictCopies(in: local, stem: "doc", ext: "txt")[0]
        // `doc (conflict from alpha YYYY-MM-DD HHMMSS).txt`
        let stamp = name.dropFirst("doc (conflict from alpha ".count).dropLast(").txt".count)
        #expect(stamp.count == 17 && stamp.filter(\.isNumber).count == 14, "unexpected conflict name \(name)")
        try await daemon.stop()
    }

    /// "a (conflict from alpha …)" and a 251-byte extension cannot both fit in 255 bytes; a
    /// device name of 64 emoji (256 bytes, which the config takes) fits in no name at all, nor
    /// in a version's. Such names were made anyway, failed, and the conflict was planned again
    /// at once, and every replaced cloud file failed to keep its version.
    @Test("a conflict and a replaced version keep both contents under names of at most 255 bytes",
          arguments: [("alpha", "a." + String(repeating: "x", count: 250)),
                      (String(repeating: "😀", count: 64), "report " + String(repeating: "é", count: 100) + ".txt")])
    func conflictOnANameNearNameMax(device: String, name: String) async throws {
        let sandbox = try SyncSandbox("conflictOnANameNearNameMax")
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: device)
        let local = daemon.local, cloud = daemon.cloud
        try SyncFiles.write(SyncFiles.join(local, name), Array("original\n".utf8))
        try await daemon.start()
        try await sandbox.converge("first sync", local, cloud) { try SyncExpect.file(cloud, name, "original\n") }
        try SyncFiles.write(SyncFiles.join(local, name), Array("edited once\n".utf8))
        try await sandbox.converge("an edit replaces the cloud's file", local, cloud) { try SyncExpect.file(cloud, name, "edited once\n") }
        try await daemon.stop()

        try SyncFiles.write(SyncFiles.join(local, name), Array("edited here\n".utf8))
        try SyncFiles.write(SyncFiles.join(cloud, name), Array("edited in the cloud\n".utf8))
        try await daemon.start()
        let label = " (conflict from " + String(device.prefix(8))
        try await sandbox.converge("conflict resolved into two files", local, cloud) {
            let copies = try SyncFiles.names(in: local).filter { $0.contains(label) }
            guard copies.count == 1 else { return "expected one conflict copy of \(name) in \(local), found \(copies)" }
            #expect(copies[0].utf8.count <= 255)
            return try SyncExpect.all(SyncExpect.file(local, name, "edited in the cloud\n"), SyncExpect.file(cloud, name, "edited in the cloud\n"),
                                      SyncExpect.file(local, copies[0], "edited here\n"),
                                      SyncExpect.file(cloud, copies[0], "edited here\n"))
        }
        #expect(daemon.logLines(containing: "name is too long").isEmpty, "the daemon tried names too long:\n\(sandbox.logs(lines: 10))")
        try await daemon.stop()
    }

    @Test("deleting 80 % of 1 000 synced files holds the deletions until confirmed", arguments: SyncDirection.allCases)
    func massDeleteIsHeld(_ direction: SyncDirection) async throws {
        let (sandbox, daemon, src, dst) = try direction.sandbox("massDeleteIsHeld")
        defer { sandbox.finish() }
        var all: [String] = []
        for d in 0..<10 {
            try SyncFiles.makeDirectory(SyncFiles.join(src, "d\(d)"))
            for f in 0..<100 {
                let path = "d\(d)/f\(f).txt"
                try SyncFiles.write(SyncFiles.join(src, path), Array("file \(path)\n".utf8))
                all.append(path)
            }
        }
        try await daemon.start()
        try await sandbox.converge("first sync of 1 000 files", src, dst, timeout: .seconds(60)) {
            let count = try SyncTree(scanning: dst).fileCount
            return count == 1000 ? nil : "\(count) of 1000 files in \(dst)"
        }

        let mark = daemon.logMark
        let deleted = all.enumerated().filter { $0.offset % 10 < 8 }.map(\.element)
        for path in deleted { try SyncFiles.remove(SyncFiles.join(src, path)) }
        // The batcher waits for the deleting to pause (up to 30 s on a busy machine) before the
        // guard sees the deletions.
        let line = try await daemon.waitForLog("holding", since: mark, timeout: .seconds(60))
        print("[massDeleteIsHeld-\(direction)] \(line)")
        // A later change still syncs (the daemon is alive and acting), and the held
        // deletions are still not applied once it has.
        try SyncFiles.write(SyncFiles.join(src, "after-the-deletes.txt"), Array("still syncing\n".utf8))
        try await sandbox.eventually("a new file still syncs while deletions are held") {
            try SyncExpect.file(dst, "after-the-deletes.txt", "still syncing\n")
        }
        // `nimbusctl status` says so. Under load the batcher may hand over the start of the
        // `rm` on its own, under the limit: that part is applied before the guard sees the
        // rest, and status counts it as kept (a revert brings it back, MassDeleteRevertTests).
        let status = daemon.controlJSON(["status"])
        #expect(status.object?["heldDeletes"] as? Int ?? 0 > 0, "nimbusctl --json status does not report the held deletions: \(status.output)")
        let kept = status.object?["keptDeletes"] as? Int ?? 0
        let remaining = try SyncTree(scanning: dst)
        let missing = deleted.filter { remaining[$0] == nil }
        #expect(missing.count == kept, "\(missing.count) of the \(deleted.count) deletions reached \(dst) without confirmation, \(kept) of them told as kept, e.g. \(missing.prefix(5))\n\(sandbox.logs(lines: 20))")
        #expect(remaining.fileCount == 1001 - kept)
        if kept > 0 { print("[massDeleteIsHeld-\(direction)] the batcher split the rm: \(kept) deletions applied before the rest was held") }

        // `nimbusctl confirm-deletes` applies them.
        let confirm = daemon.control(["confirm-deletes"])
        #expect(confirm.status == 0, "nimbusctl confirm-deletes exited \(confirm.status): \(confirm.output)")
        try await sandbox.converge("confirmed deletions applied", src, dst, timeout: .seconds(30)) {
            let count = try SyncTree(scanning: dst).fileCount
            return count == 201 ? nil : "\(count) files in \(dst), expected 201"
        }
        try await daemon.stop()
    }

    @Test("a root whose marker is missing at start is never read as everything deleted", arguments: SyncDirection.allCases)
    func markerMissingAtStart(_ direction: SyncDirection) async throws {
        // localToCloud: the cloud folder is replaced by an empty one; cloudToLocal: the local one.
        let (sandbox, daemon, kept, replaced) = try direction.sandbox("markerMissingAtStart")
        defer { sandbox.finish() }
        for i in 0..<20 { try SyncFiles.write(SyncFiles.join(kept, "file\(i).txt"), Array("content \(i)\n".utf8)) }
        try await daemon.start()
        try await sandbox.converge("first sync", kept, replaced) { try SyncExpect.file(replaced, "file19.txt", "content 19\n") }
        try await daemon.stop()
        let before = try SyncTree(scanning: kept)

        try SyncFiles.rename(Array(replaced.utf8), Array((replaced + ".away").utf8))
        try SyncFiles.makeDirectory(Array(replaced.utf8))
        let mark = daemon.logMark
        try await daemon.start()
        let line = try await daemon.waitForLog(direction == .localToCloud ? "has no Nimbus marker (.nimbus/root)"
                                                                          : "has no Nimbus marker (.nimbus-root)", since: mark)
        #expect(line.contains("error"), "the missing marker is not logged as an error: \(line)")
        #expect(daemon.isRunning, "nimbusd exited on a missing marker instead of waiting for it")
        let status = daemon.controlJSON(["status"])
        #expect(status.object?["phase"] as? String == "halted" && (status.object?["reason"] as? String ?? "").contains("no Nimbus marker"),
                "nimbusctl status does not say that sync is halted and why: \(status.output)")
        let after = try SyncTree(scanning: kept)
        #expect(after.differences(from: before, names: ("after", "before")) == nil, "\(kept) changed while the other root was missing")
        #expect(try SyncFiles.names(in: replaced).filter { !$0.hasPrefix(".nimbus") }.isEmpty,
                "files were written into the empty replacement \(replaced)")

        // The real folder comes back: sync resumes by itself.
        let back = daemon.logMark
        try SyncFiles.removeDirectory(Array(replaced.utf8))
        try SyncFiles.rename(Array((replaced + ".away").utf8), Array(replaced.utf8))
        try await daemon.waitForLog("sync resumes", since: back, timeout: .seconds(15))
        try SyncFiles.write(SyncFiles.join(kept, "after.txt"), Array("after the return\n".utf8))
        try await sandbox.converge("sync after the folder came back", kept, replaced) { try SyncExpect.file(replaced, "after.txt", "after the return\n") }
        try await daemon.stop()
    }

    @Test("a local folder paired with another cloud folder halts sync, and the halted daemon waits without spinning")
    func pairedWithAnotherCloud() async throws {
        let sandbox = try SyncSandbox("pairedWithAnotherCloud")
        defer { sandbox.finish() }
        let first = try sandbox.daemon(device: "alpha")
        try SyncFiles.write(SyncFiles.join(first.local, "file.txt"), Array("content\n".utf8))
        try await first.start()
        try await sandbox.converge("first sync", first.local, first.cloud) { try SyncExpect.file(first.cloud, "file.txt", "content\n") }
        try await first.stop()

        // The same local folder, now with another (new) cloud folder and a fresh state.
        let other = try sandbox.daemon(device: "beta", local: "local", cloud: "other-cloud")
        let mark = other.logMark
        try await other.start()
        _ = try await other.waitForLog("is paired with another cloud folder", since: mark)
        #expect(try SyncFiles.names(in: other.cloud).filter { !$0.hasPrefix(".nimbus") }.isEmpty, "files were copied into the other cloud folder")
        // Halted means waiting: looking again every few seconds, not in a loop. (Looking reads
        // the local marker, and that open wakes the watcher.)
        let cpuBefore = try #require(other.cpuSeconds())
        try await Task.sleep(for: .seconds(2))
        let cpuUsed = try #require(other.cpuSeconds()) - cpuBefore
        #expect(cpuUsed < 0.5, "the halted daemon used \(cpuUsed) s of CPU in 2 s: it is spinning")
        try await other.stop()
    }

    @Test("two daemons on one cloud folder converge, and concurrent edits end as a conflict")
    func twoDaemonsShareOneCloud() async throws {
        let sandbox = try SyncSandbox("twoDaemons")
        defer { sandbox.finish() }
        let alpha = try sandbox.daemon(device: "alpha", local: "local-alpha")
        let beta = try sandbox.daemon(device: "beta", local: "local-beta")
        let cloud = alpha.cloud
        try SyncFiles.write(SyncFiles.join(alpha.local, "shared.txt"), Array("shared v1\n".utf8))
        try SyncFiles.write(SyncFiles.join(alpha.local, "from-alpha.txt"), Array("alpha\n".utf8))
        try await alpha.start()
        try await beta.start()
        try await sandbox.converge("beta gets alpha's files", beta.local, cloud) { try SyncExpect.file(beta.local, "from-alpha.txt", "alpha\n") }

        try SyncFiles.write(SyncFiles.join(beta.local, "from-beta.txt"), Array("beta\n".utf8))
        try SyncFiles.remove(SyncFiles.join(beta.local, "from-alpha.txt"))
        try await sandbox.converge("alpha gets beta's changes", alpha.local, cloud) {
            try SyncExpect.all(SyncExpect.file(alpha.local, "from-beta.txt", "beta\n"), SyncExpect.absent(alpha.local, "from-alpha.txt"))
        }
        try await sandbox.converge("all three folders equal", beta.local, cloud)

        try await alpha.stop()
        try await beta.stop()
        let contents = ["alpha": "shared v2 written on alpha\n", "beta": "shared v2 written on beta, longer\n"]
        try SyncFiles.write(SyncFiles.join(alpha.local, "shared.txt"), Array(contents["alpha"]!.utf8))
        try SyncFiles.write(SyncFiles.join(beta.local, "shared.txt"), Array(contents["beta"]!.utf8))
        try alpha.launch()
        try beta.launch()
        try await alpha.waitUntilReady()
        try await beta.waitUntilReady()
        try await sandbox.eventually("one conflict copy, both contents kept, all three folders equal", timeout: .seconds(20)) {
            let copies = try Self.conflictCopies(in: cloud, stem: "shared", ext: "txt")
            guard copies.count == 1 else { return "expected one conflict copy of shared.txt in the cloud, found \(copies)" }
            let loser = copies[0].hasPrefix("shared (conflict from alpha ") ? "alpha" : "beta"
            let winner = loser == "alpha" ? "beta" : "alpha"
            for root in [cloud, alpha.local, beta.local] {
                if let problem = try SyncExpect.all(SyncExpect.file(root, "shared.txt", contents[winner]!), SyncExpect.file(root, copies[0], contents[loser]!)) {
                    return problem
                }
            }
            let c = try SyncTree(scanning: cloud)
            return try c.differences(from: SyncTree(scanning: alpha.local), names: (cloud, alpha.local))
                ?? c.differences(from: SyncTree(scanning: beta.local), names: (cloud, beta.local))
        }
        try await alpha.stop()
        try await beta.stop()
    }
}
