import Foundation
import Glibc
import Testing

/// What the layout of the local folder must not break (issue #12): a file with several names
/// (hard links), and a folder renamed while a download into it runs.
@Suite(.timeLimit(.minutes(3)))
struct LocalLayoutTests {
    typealias F = SyncFiles
    typealias E = SyncExpect

    @Test("an append through one hard link reaches the cloud copies of every name of the file")
    func aWriteThroughOneHardLinkUpdatesEveryName() async throws {
        let sandbox = try SyncSandbox("aWriteThroughOneHardLinkUpdatesEveryName")
        defer { sandbox.finish() }
        let daemon = try sandbox.daemon(device: "alpha")
        let local = daemon.local, cloud = daemon.cloud
        try F.makeDirectory(F.join(local, "d"))
        try F.write(F.join(local, "hl_a"), Array("one\n".utf8))
        try F.check(F.call("link", F.join(local, "hl_a")) { a in
            F.call("link", F.join(local, "d/hl_b")) { b in link(a, b) }
        }, "link", F.join(local, "d/hl_b"))
        try await daemon.start()
        try await sandbox.converge("first sync", local, cloud) {
            try E.all(E.file(cloud, "hl_a", "one\n"), E.file(cloud, "d/hl_b", "one\n"))
        }
        try F.append(F.join(local, "d/hl_b"), Array("two\n".utf8))
        try await sandbox.converge("both names updated", local, cloud) {
            try E.all(E.file(cloud, "hl_a", "one\ntwo\n"), E.file(cloud, "d/hl_b", "one\ntwo\n"))
        }
        // And the other way round, after a restart (the names are found again in the journal).
        try await daemon.stop()
        try await daemon.start()
        try F.append(F.join(local, "hl_a"), Array("three\n".utf8))
        try await sandbox.converge("both names updated after a restart", local, cloud) {
            try E.all(E.file(cloud, "hl_a", "one\ntwo\nthree\n"), E.file(cloud, "d/hl_b", "one\ntwo\nthree\n"))
        }
        try await daemon.stop()
    }
}
