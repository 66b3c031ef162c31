@testable import NimbusClient
import NimbusCore
import NimbusProtocol
import Testing

/// Human output of each result, pinned down on fixed data and a fixed clock.
struct RenderTests {
    static let now = 1_700_000_000.0
    let plain = RenderContext(color: false, now: now)

    func ns(_ secondsAgo: Double) -> Int64 { Int64((Self.now - secondsAgo) * 1e9) }

    func entry(_ path: String, _ state: String, size: Int64 = 0, kind: String = "file", ago: Double = 0,
               residency: String = "auto") -> Entry {
        Entry(path: WirePath(path), kind: kind, size: size, mtimeNs: ns(ago), state: FileState(wireName: state, progress: 0.45, message: "disk full")!,
              conflictCopy: state == "conflict" ? WirePath("Docs/b (conflict).txt") : nil, residency: residency)
    }

    @Test func listingsAlignNamesSizesAndTimes() {
        let entries = [
            entry("Docs/a.txt", "downloaded", size: 1_200_000, ago: 180),
            entry("Docs/b.txt", "conflict", size: 12, ago: 7200),
            entry("Docs/Sub", "local", kind: "directory", ago: 2 * 86_400),
            entry("Docs/up.bin", "uploading", size: 3_400_000_000, ago: 2, residency: "pinned"),
            entry("Docs/bad", "error", size: 5),
        ]
        #expect(Render.entries(entries, base: "Docs", plain) == """
            ✓  a.txt   1.2 MB  3 min ago
            !  b.txt     12 B  2 h ago     this device's version: Docs/b (conflict).txt
            •  Sub/         -  2 days ago
            ↑  up.bin  3.4 GB  just now    45%; pinned
            ✗  bad        5 B  just now    disk full
            """)
    }

    @Test func colourIsOnlyAddedWhenAsked() {
        let entries = [entry("a", "downloaded")]
        let colored = Render.entries(entries, base: "", RenderContext(color: true, now: Self.now))
        #expect(colored.contains("\u{1B}[32m✓\u{1B}[0m"))
        #expect(stripEscapes(colored) == Render.entries(entries, base: "", plain))
        #expect(!Render.entries(entries, base: "", plain).contains("\u{1B}"))
    }

    @Test func statusSaysWhatNeedsAttention() {
        var status = StatusResult(phase: "idle", reason: nil, paused: false, tracked: 12, heldDeletes: 0, conflicts: 0,
                                  bytesCopied: 1_500_000, filesCopied: 3, lastError: nil, instance: "default",
                                  localRoot: "/home/ann/Nimbus", cloudRoot: "/mnt/cloud", deviceName: "laptop",
                                  daemonVersion: "0.1.0", startedAtNs: ns(3600), clients: 1)
        let calm = Render.status(status, plain)
        #expect(calm.hasPrefix("● Up to date\n"))
        #expect(calm.contains("  Local     /home/ann/Nimbus"))
        #expect(calm.contains("12 entries in sync"))
        #expect(calm.contains("3 files (1.5 MB) since nimbusd started 1 h ago"))
        #expect(!calm.contains("Conflicts") && !calm.contains("Held"))

        status.phase = "halted"
        status.reason = "the cloud folder /mnt/cloud is missing its marker"
        status.heldDeletes = 120
        status.conflicts = 2
        status.lastError = "copy failed"
        let troubled = Render.status(status, plain)
        #expect(troubled.hasPrefix("● Stopped: the cloud folder /mnt/cloud is missing its marker"))
        #expect(troubled.contains("2 files changed on both sides: see 'nimbusctl conflicts'"))
        #expect(troubled.contains("120 deletions held by the safety guard"))
        #expect(troubled.contains("nimbusctl confirm-deletes") && troubled.contains("nimbusctl revert-deletes"))
        #expect(troubled.contains("Last error  copy failed"))
        #expect(status.needsAttention)
        #expect(!troubled.contains("just before"))
        status.keptDeletes = 248
        let split = Render.status(status, plain)
        #expect(split.contains("120 deletions held by the safety guard, and 248 deletions of the same kind applied just before"))
        #expect(split.contains("(brings the files back, those deleted just before too)"))
    }

    /// The headline names the most urgent thing, in this order: a stopped pair, held
    /// deletions (with both commands, reaching the same daemon), conflicts, errors, a pause.
    @Test func statusHeadlineNamesTheMostUrgentThing() {
        var status = StatusResult(phase: "idle", reason: nil, paused: false, tracked: 12, heldDeletes: 0, conflicts: 0,
                                  bytesCopied: 0, filesCopied: 0, lastError: nil, instance: "default",
                                  localRoot: "/l", cloudRoot: "/c", deviceName: "d", daemonVersion: "0.1.0",
                                  startedAtNs: ns(60), clients: 1, versionsCount: 3, versionsBytes: 2_500_000)
        #expect(!status.needsAttention)
        #expect(Render.status(status, plain).contains("  Versions  3 previous versions kept (2.5 MB): see 'nimbusctl versions --all'"))
        #expect(!Render.status(status, plain).contains("Style"))
        status.placeholderStyle = "suffix"
        status.placeholderStyleReason = "nimbusd does not have CAP_SYS_ADMIN"
        #expect(Render.status(status, plain).contains(
            "  Style     placeholders named NAME.nimbus (nimbusd does not have CAP_SYS_ADMIN)"))
        status.placeholderStyle = nil
        status.paused = true
        status.phase = "paused"
        #expect(Render.status(status, plain).hasPrefix("● Paused: run 'nimbusctl resume' to sync again\n"))
        #expect(status.needsAttention)
        status.errors = 2
        #expect(Render.status(status, plain).hasPrefix("● Needs you: 2 files failed to sync; see 'nimbusctl ls -r --state error'\n"))
        status.conflicts = 1
        #expect(Render.status(status, plain).hasPrefix("● Needs you: 1 conflict; see 'nimbusctl conflicts'\n"))
        status.heldDeletes = 6247
        var socket = plain
        socket.reach = ["--socket", "/run/user/1000/my sockets/d.sock"]
        let held = Render.status(status, socket)
        #expect(held.hasPrefix("● Needs you: 6247 deletions held by the safety guard; decide with "
                               + "nimbusctl --socket '/run/user/1000/my sockets/d.sock' confirm-deletes or "
                               + "nimbusctl --socket '/run/user/1000/my sockets/d.sock' revert-deletes\n"), "\(held)")
        #expect(held.contains("  Carry out  nimbusctl --socket '/run/user/1000/my sockets/d.sock' confirm-deletes\n"), "\(held)")
        #expect(held.contains("  Conflicts  1 file changed on both sides: see nimbusctl --socket '/run/user/1000/my sockets/d.sock' conflicts\n"), "\(held)")
        var instance = plain
        instance.reach = ["--instance", "work"]
        #expect(Render.status(status, instance).hasPrefix("● Needs you: 6247 deletions held by the safety guard; decide with "
                                                          + "nimbusctl --instance work confirm-deletes or nimbusctl --instance work revert-deletes\n"))
        // A journal that cannot be written comes before held deletions: nothing is recorded.
        status.journalError = "cannot write the journal: append to /s/journal.log: Operation not permitted"
        let unrecorded = Render.status(status, plain)
        #expect(unrecorded.hasPrefix("● Needs you: the journal cannot be written; "), "\(unrecorded)")
        #expect(unrecorded.contains("  Journal    cannot write the journal: append to /s/journal.log: Operation not permitted"), "\(unrecorded)")
        status.phase = "halted"
        status.reason = "The cloud folder /c cannot be opened"
        #expect(Render.status(status, plain).hasPrefix("● Stopped: The cloud folder /c cannot be opened\n"))
        status = StatusResult(phase: "syncing", reason: nil, paused: false, tracked: 1, heldDeletes: 0, conflicts: 0,
                              bytesCopied: 0, filesCopied: 0, lastError: "old trouble", instance: "default",
                              localRoot: "/l", cloudRoot: "/c", deviceName: "d", daemonVersion: "0.1.0",
                              startedAtNs: ns(60), clients: 1)
        #expect(Render.status(status, plain).hasPrefix("● Syncing\n"))
        #expect(!status.needsAttention, "an error of the past that is retried no more does not need the user")
        status.journalError = "cannot write the journal"
        #expect(status.needsAttention, "a journal that cannot be written needs the user: nothing is recorded")
    }

    /// Every command printed for pasting survives a shell: names with blanks and quotes are
    /// quoted, plain ones stay readable.
    @Test func pastedCommandsAreShellQuoted() {
        let versions = Render.versions([VersionInfo(id: "v1", size: 1, mtimeNs: ns(60))],
                                       of: "c1 (conflict from vm 2024-01-01 120000).txt", plain)
        #expect(versions.hasSuffix("Restore one with: nimbusctl restore 'c1 (conflict from vm 2024-01-01 120000).txt' --version VERSION"))
        #expect(ShellWord.quote("it's") == "'it'\\''s'")
        #expect(ShellWord.quote("Docs/a-b_c.txt") == "Docs/a-b_c.txt")
        #expect(ShellWord.quote("") == "''")
        #expect(ShellWord.quote("$HOME*") == "'$HOME*'")
        #expect(ShellWord.quote("a\nb") == "$'a\\x0ab'")
    }

    @Test func infoShowsEveryField() {
        let text = Render.info(entry("Docs/b.txt", "conflict", size: 1234, ago: 60), localPath: "/r/Docs/b.txt", placeholderFile: nil, plain)
        for expected in ["Path           Docs/b.txt", "State          ! conflict", "Conflict copy  Docs/b (conflict).txt",
                         "Size           1.2 kB (1234 bytes)", "Modified       1 min ago", "Residency      auto",
                         "On disk        /r/Docs/b.txt"] {
            #expect(text.contains(expected), "\(expected)\n\(text)")
        }
    }

    /// A placeholder is the file itself with real names, NAME.nimbus with the suffix style
    /// (seen: info said "On disk /r/a.txt.nimbus (placeholder)" for a real-name placeholder,
    /// a file that does not exist).
    @Test func infoNamesThePlaceholderFileOfEitherStyle() {
        let placeholder = entry("a.txt", "notDownloaded", size: 5, ago: 60)
        let realName = Render.info(placeholder, localPath: "/r/a.txt", placeholderFile: nil, plain)
        #expect(realName.contains("On disk    /r/a.txt (placeholder)"), "\(realName)")
        let suffix = Render.info(placeholder, localPath: "/r/a.txt", placeholderFile: "/r/a.txt.nimbus", plain)
        #expect(suffix.contains("On disk    /r/a.txt.nimbus (placeholder)"), "\(suffix)")
    }

    @Test func conflictsAndVersions() {
        #expect(Render.conflicts([], plain) == "No conflicts.")
        let conflicts = Render.conflicts([ConflictInfo(path: WirePath("n.txt"), conflictCopy: WirePath("n (conflict).txt"))], plain)
        #expect(conflicts.contains("!  n.txt  this device's version: n (conflict).txt"))
        #expect(conflicts.contains("1 conflict. Settle one with: nimbusctl resolve PATH --keep local|cloud|both"))

        #expect(Render.versions([], of: "n.txt", plain) == "No previous versions of n.txt are kept.")
        let versions = Render.versions([VersionInfo(id: "v1", size: 2000, mtimeNs: ns(86_400 * 3))], of: "n.txt", plain)
        #expect(versions.contains("VERSION    SIZE  MODIFIED\n"))
        #expect(versions.contains("v1       2.0 kB  2023-11-11 22:13  3 days ago"))
        #expect(versions.contains("nimbusctl restore n.txt --version VERSION"))
    }

    @Test func watchEventsAreOneLineEach() {
        var change = EventParams(type: "state", timeNs: ns(0))
        change.setPath(WirePath("a.txt"))
        change.state = "downloaded"
        #expect(Render.event(change, plain) == "22:13:20  ✓ a.txt  in sync")
        var conflict = EventParams(type: "conflict", timeNs: ns(0))
        conflict.setPath(WirePath("b"))
        conflict.setConflictCopy(WirePath("b (c)"))
        #expect(Render.event(conflict, plain) == "22:13:20  ! b  conflict; this device's version is b (c)")
        var phase = EventParams(type: "phase", timeNs: ns(0))
        phase.phase = "halted"
        phase.reason = "no marker"
        #expect(Render.event(phase, plain) == "22:13:20  phase: halted (no marker)")
        phase.phase = "syncing"
        #expect(Render.event(phase, plain) == nil, "syncing and idle are too chatty to show")
        #expect(Render.event(EventParams(type: "overflow", timeNs: ns(0)), plain)?.contains("dropped") == true)
        var future = EventParams(type: "future-kind", timeNs: ns(0))
        #expect(Render.event(future, plain) == "22:13:20  future-kind", "a newer daemon's type is shown by its name")
        future.setPath(WirePath("x"))
        future.message = "what happened"
        #expect(Render.event(future, plain) == "22:13:20  future-kind  x  what happened")
        var deleted = EventParams(type: "deleted", timeNs: ns(0))
        deleted.setPath(WirePath("old.txt"))
        deleted.side = "cloud"
        #expect(Render.event(deleted, plain) == "22:13:20  − old.txt  deleted in the cloud folder (kept among the versions)")
        deleted.side = "local"
        #expect(Render.event(deleted, plain) == "22:13:20  − old.txt  deleted here")
        var renamed = EventParams(type: "renamed", timeNs: ns(0))
        renamed.setPath(WirePath("new.txt"))
        renamed.setFrom(WirePath("old.txt"))
        renamed.side = "local"
        #expect(Render.event(renamed, plain) == "22:13:20  → old.txt → new.txt  renamed here")
    }

    @Test func heldDeletionsAndRefusedFetchesAreOneLineEach() {
        var held = EventParams(type: "deletions-held", timeNs: ns(0))
        held.setPath(WirePath("a"))
        held.side = "cloud"
        held.count = 5
        held.paths = ["a", "b", "c"]
        #expect(Render.event(held, plain) == "22:13:20  ‖ 5 deletions held in the cloud folder, more at once than the safety limit "
                + "allows: a, b, c and 2 more; 'nimbusctl confirm-deletes' applies them, 'nimbusctl revert-deletes' restores the files")
        held.side = "local"
        held.count = 1
        held.paths = ["a"]
        #expect(Render.event(held, plain)?.hasPrefix("22:13:20  ‖ 1 deletion held here, more at once than the safety limit allows: a; ") == true)
        held.keptDeletes = 131
        #expect(Render.event(held, plain) == "22:13:20  ‖ 1 deletion held here, more at once than the safety limit allows: a; "
                + "and 131 deletions of the same kind applied just before, kept; 'nimbusctl confirm-deletes' applies them, "
                + "'nimbusctl revert-deletes' restores the files, those deleted just before too")
        var refused = EventParams(type: "fetches-refused", timeNs: ns(0))
        refused.setPath(WirePath("my photos/a.jpg"))
        refused.limit = 60
        refused.program = "tracker-miner-f"
        #expect(Render.event(refused, plain) == "22:13:20  ✗ not-downloaded files opened faster than open-rate-limit = 60 a minute "
                + "(tracker-miner-f opened my photos/a.jpg): such opens fail for now; nimbusctl download 'my photos/a.jpg' fetches what you need")
        refused.program = nil
        #expect(Render.event(refused, plain)?.contains("(the last was my photos/a.jpg)") == true)
    }
}
