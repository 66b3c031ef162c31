import NimbusCore
import NimbusSystem
import NimbusVocabulary
import Testing
@testable import NimbusDaemon

/// Which engine events become desktop notifications, and how often: each once per occurrence.
@Suite struct DesktopAlertFilterTests {
    /// `seconds` after the clock's origin.
    func at(_ seconds: Int64) -> MonotonicInstant { .origin + .seconds(seconds) }

    func path(_ text: String) -> RelativePath { try! RelativePath(validating: text) }

    func filter(_ command: [String] = ["nimbusctl"]) -> DesktopAlertFilter {
        DesktopAlertFilter(localRoot: "/home/u/Nimbus", cloudRoot: "/mnt/cloud", controlCommand: command)
    }

    /// Feeds `events` at the given seconds, then collects what is due well after the last.
    func run(_ events: [(Int64, EngineEvent)], _ filter: inout DesktopAlertFilter) -> [DesktopAlert] {
        var alerts: [DesktopAlert] = []
        for (second, event) in events {
            alerts += filter.due(now: at(second))
            alerts += filter.absorb(event, now: at(second))
        }
        alerts += filter.due(now: at(events.last?.0 ?? 0) + DesktopAlertFilter.gatherWindow)
        return alerts
    }

    @Test func heldDeletionsAreOneNotificationWithBothActions() {
        var f = filter(["nimbusctl", "--instance", "work"])
        let alerts = run([(0, .deletionsHeld(on: .cloud, [path("a/1.txt"), path("a/2.txt"), path("b c.txt"), path("d.txt")]))], &f)
        try! #require(alerts.count == 1)
        #expect(alerts[0].summary == "Nimbus is holding 4 deletions")
        #expect(alerts[0].body.contains("deleted in your local folder") && alerts[0].body.contains("from the cloud folder /mnt/cloud"))
        #expect(alerts[0].body.contains("a/1.txt, a/2.txt, b c.txt and 1 more"))
        #expect(alerts[0].body.contains("nimbusctl --instance work confirm-deletes or nimbusctl --instance work revert-deletes"))
        #expect(alerts[0].actions == [.confirmDeletes, .revertDeletes] && alerts[0].urgency == 2)
        #expect(alerts[0].heldPaths == [path("a/1.txt"), path("a/2.txt"), path("b c.txt"), path("d.txt")])
    }

    @Test func heldDeletionsSayThatThoseAppliedJustBeforeComeBackToo() {
        var f = filter()
        let alerts = run([(0, .deletionsHeld(on: .local, [path("a"), path("b")], alreadyApplied: 248))], &f)
        try! #require(alerts.count == 1)
        #expect(alerts[0].summary == "Nimbus is holding 2 deletions")
        #expect(alerts[0].body.contains("248 files deleted from your local folder") && alerts[0].body.contains("just before are kept, and restoring brings them back too"),
                "\(alerts[0].body)")
    }

    @Test func anErrorRetriedEveryPassIsToldOnceUntilThePathIsFine() {
        var f = filter()
        let error = EngineEvent.error(path("r.pdf"), "cannot write r.pdf in the local folder: the disk is full")
        var alerts = run([(0, error), (5, error), (10, error)], &f)
        #expect(alerts.map(\.summary) == ["Nimbus cannot sync r.pdf"])
        #expect(alerts.first?.body == "cannot write r.pdf in the local folder: the disk is full")
        // In progress does not count as fine; downloaded does; a new failure is told again.
        alerts = run([(20, .stateChanged(path("r.pdf"), .uploading(progress: 0.5))), (21, error)], &f)
        #expect(alerts.isEmpty)
        alerts = run([(30, .stateChanged(path("r.pdf"), .downloaded)), (31, error)], &f)
        #expect(alerts.map(\.summary) == ["Nimbus cannot sync r.pdf"])
    }

    @Test func aBurstOfErrorsIsOneNotification() {
        var f = filter()
        let events = (0..<500).map { (Int64(0), EngineEvent.error(path("f\($0)"), "the disk is full")) }
        let alerts = run(events, &f)
        try! #require(alerts.count == 1)
        #expect(alerts[0].summary == "Nimbus cannot sync 500 files")
        #expect(alerts[0].body.hasPrefix("f0, f1, f2 and 497 more. The first: the disk is full. nimbusctl status lists them"))
    }

    @Test func conflictsAreGatheredAndShowTheirFolder() {
        var f = filter()
        var alerts = run([(0, .conflict(path("docs/plan 2.odt"), copy: path("docs/plan 2 (conflict from laptop 2026-11-25 101500).odt")))], &f)
        try! #require(alerts.count == 1)
        #expect(alerts[0].summary == "Conflict: plan 2.odt")
        #expect(alerts[0].body.contains("/home/u/Nimbus/docs/plan 2.odt was changed here and on another device"))
        #expect(alerts[0].body.contains("nimbusctl resolve 'docs/plan 2.odt' --keep local"))
        #expect(alerts[0].actions == [.showConflict] && alerts[0].folder == "/home/u/Nimbus/docs")

        alerts = run([(100, .conflict(path("a/x"), copy: path("a/x (c)"))), (101, .conflict(path("b/y"), copy: path("b/y (c)")))], &f)
        #expect(alerts.map(\.summary) == ["2 conflicts in Nimbus"])
        #expect(alerts.first?.folder == "/home/u/Nimbus")
    }

    @Test func nothingIsDueBeforeTheWindowEnds() {
        var f = filter()
        #expect(f.absorb(.conflict(path("x"), copy: path("y")), now: .origin).isEmpty)
        #expect(f.nextDeadline == .origin + DesktopAlertFilter.gatherWindow)
        #expect(f.due(now: .origin + DesktopAlertFilter.gatherWindow - .nanoseconds(1)).isEmpty)
        #expect(f.due(now: .origin + DesktopAlertFilter.gatherWindow).count == 1)
        #expect(f.nextDeadline == nil && f.due(now: at(10)).isEmpty)
    }

    @Test func haltedAndStormAreToldAtOnce() {
        var f = filter()
        let halted = f.absorb(.phase(.halted("The cloud folder /mnt/cloud cannot be opened")), now: .origin)
        #expect(halted == [DesktopAlert(summary: "Nimbus stopped syncing", body: "The cloud folder /mnt/cloud cannot be opened", urgency: 2)])
        let storm = f.absorb(.fetchesRefused(path("big/movie.mkv"), limit: 30, program: "tracker-miner-f"), now: .origin)
        #expect(storm.count == 1)
        #expect(storm.first?.body.contains("open-rate-limit = 30 a minute (tracker-miner-f opened /home/u/Nimbus/big/movie.mkv)") == true)
        #expect(storm.first?.body.contains("nimbusctl download big/movie.mkv") == true)
        // Idle, syncing, renames and plain state changes say nothing.
        #expect(f.absorb(.phase(.idle), now: .origin).isEmpty && f.absorb(.stateChanged(path("a"), .downloaded), now: .origin).isEmpty)
        #expect(f.due(now: at(100)).isEmpty)
    }
}
