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
        #expect(calm.contains("  Local   /home/ann/Nimbus"))
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
    }

    @Test func infoShowsEveryField() {
        let text = Render.info(entry("Docs/b.txt", "conflict", size: 1234, ago: 60), localPath: "/r/Docs/b.txt", plain)
        for expected in ["Path           Docs/b.txt", "State          ! conflict", "Conflict copy  Docs/b (conflict).txt",
                         "Size           1.2 kB (1234 bytes)", "Modified       1 min ago", "Residency      auto",
                         "On disk        /r/Docs/b.txt"] {
            #expect(text.contains(expected), "\(expected)\n\(text)")
        }
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
        #expect(Render.event(EventParams(type: "future-kind", timeNs: ns(0)), plain) == nil)
    }
}
