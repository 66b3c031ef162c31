import Foundation
import Testing
import NimbusTestSupport

/// The state marks of a first sync's uploads are written after READY=1, not inside the pass
/// (issue 15, `SyncEngine+PendingMarks`): once the daemon answers, every uploaded file gets
/// `user.nimbus.state=downloaded` soon after, and no file shows another state meanwhile.
@Suite(.timeLimit(.minutes(3)))
struct FirstSyncMarkTests {
    @Test func everyFileOfTheFirstSyncIsMarkedDownloadedOnceTheDaemonAnswers() async throws {
        let d = try CtlDaemon()
        let files = (0..<60).map { "d\($0 % 6)/f\($0).txt" }
        do {
            for file in files { try d.write(file, "content of \(file)") }
            try await d.start()
            try await Polling.eventually("every file of the first sync to be marked downloaded") {
                let marks = files.map { PlaceholderFiles.xattr(d.local + "/" + $0, "user.nimbus.state") }
                let wrong = zip(files, marks).filter { $0.1 != nil && $0.1 != "downloaded" }
                #expect(wrong.isEmpty, "a state other than downloaded: \(wrong)")
                let unmarked = zip(files, marks).filter { $0.1 == nil }.map(\.0)
                return unmarked.isEmpty ? nil : "\(unmarked.count) not marked yet, e.g. \(unmarked[0])"
            }
            let status = try await d.ctl(["--json", "status"]).json()
            #expect(status["tracked"] as? Int ?? 0 >= files.count, "\(status)")
        } catch {
            let kept = TemporaryDirectory.keepCopies(of: [d.logPath], label: "first sync marks")
            await d.stop()
            throw HarnessFailure("\(error)\n\(d.logTail())\n\(kept)")
        }
        await d.stop()
    }
}
