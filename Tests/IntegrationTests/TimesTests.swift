import Foundation
import Glibc
import NimbusTestTraits
import Testing
import NimbusTestSupport

/// Symlinks and folders keep their modification times on sync, and a symlink whose own time
/// changes (`touch -h`) is synced instead of staying `local` forever (issue #13).
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(2)))
struct TimesTests {
    static let year2020: Int64 = 1_577_836_800  // 2020-01-01T00:00:00Z

    /// `touch -h -d @seconds path`: the entry's own time, symlinks not followed.
    func setTime(_ path: String, _ seconds: Int64) throws {
        var times = [timespec(tv_sec: Int(seconds), tv_nsec: 0), timespec(tv_sec: Int(seconds), tv_nsec: 0)]
        guard utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW) == 0 else {
            throw HarnessFailure("utimensat \(path): errno \(errno)")
        }
    }

    func time(_ path: String) -> Int64? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return Int64(st.st_mtim.tv_sec)
    }

    @Test func symlinksAndFoldersKeepTheirTimesAndATouchedLinkIsSynced() async throws {
        try await CtlDaemon.with { d in
            do {
                // Made while paused, so the daemon sees them finished, with their old times.
                #expect(try await d.ctl(["pause"]).status == 0)
                try FileManager.default.createDirectory(atPath: d.local + "/old/inner", withIntermediateDirectories: true)
                try d.write("old/inner/a.txt", "a")
                try FileManager.default.createSymbolicLink(atPath: d.local + "/old/link", withDestinationPath: "inner/a.txt")
                try setTime(d.local + "/old/inner/a.txt", Self.year2020)
                try setTime(d.local + "/old/link", Self.year2020 + 1)
                try setTime(d.local + "/old/inner", Self.year2020 + 2)
                try setTime(d.local + "/old", Self.year2020 + 3)
                #expect(try await d.ctl(["resume"]).status == 0)
                try await Polling.eventually("the folder, the file and the link to reach the cloud with their times") {
                    let times = ["old", "old/inner", "old/link", "old/inner/a.txt"].map { time(d.cloud + "/" + $0) }
                    let expected: [Int64?] = [Self.year2020 + 3, Self.year2020 + 2, Self.year2020 + 1, Self.year2020]
                    return times == expected ? nil : "cloud times \(times), expected \(expected)"
                }
                let entry = try await d.ctl(["--json", "info", "old/link"]).json()
                #expect(entry["state"] as? String == "downloaded", "\(entry)")

                // touch -h on the link: synced, and the link is in sync again (not `local` forever).
                try setTime(d.local + "/old/link", Self.year2020 + 100)
                try await Polling.eventually("the link's new time to reach the cloud and the link to be in sync") {
                    let state = try await d.ctl(["--json", "info", "old/link"]).json()["state"] as? String
                    let cloudTime = time(d.cloud + "/old/link")
                    return cloudTime == Self.year2020 + 100 && state == "downloaded" ? nil : "cloud \(cloudTime ?? -1), state \(state ?? "?")"
                }
                // And after a rescan too.
                #expect(try await d.ctl(["rescan"]).status == 0)
                let again = try await d.ctl(["--json", "info", "old/link"]).json()["state"] as? String
                #expect(again == "downloaded")

                // A folder changed in the cloud keeps the cloud's time here, set after its contents.
                #expect(try await d.ctl(["pause"]).status == 0)
                try d.write("old/inner/b.txt", "b", side: "cloud")
                try setTime(d.cloud + "/old/inner", Self.year2020 + 200)
                #expect(try await d.ctl(["resume"]).status == 0)
                try await Polling.eventually("b.txt and the folder's time to come down") {
                    let folder = time(d.local + "/old/inner")
                    return d.read("old/inner/b.txt") == "b" && folder == Self.year2020 + 200 ? nil : "folder time \(folder ?? -1)"
                }
            } catch {
                throw HarnessFailure("\(error)\n\(d.logTail())")
            }
        }
    }
}
