import NimbusCore
import NimbusSystem
import NimbusVocabulary

// Leftover temporary files (DESIGN §3, issue 12 item 4). A crash, a failed copy or a folder
// renamed during a download leaves a `.nimbus-tmp-` file behind. They are removed at start,
// and by the running daemon every few minutes, between passes (none of its own copies is in
// flight then). In the cloud, each device keeps its temporaries in a folder of its own,
// `.nimbus/tmp/<device>/`: a device removes its own at will, and another device's only when
// that device's folder has not changed for hours (its daemon is gone), never a copy that
// another machine is making right now.

extension SyncEngine {
    /// How often the running daemon sweeps leftover temporaries.
    static var temporarySweepInterval: Duration { .minutes(5) }
    /// The running daemon's sweep leaves temporaries younger than this, and those a program
    /// has open (an application's coordinated write is not even looked at: only the exact
    /// name of a copy's temporary is).
    static var temporarySafeAge: Duration { .minutes(10) }
    /// Another device's cloud temporaries are removed once its folder of them, and everything
    /// in it, has not changed for this long: a copy in flight writes there more often.
    static var otherDevicesStaleAge: Duration { .hours(6) }

    /// Where this device's temporaries go in the cloud folder.
    var cloudTemporaryDirectory: RelativePath { RootMarkers.temporary(for: settings.deviceName) }

    /// At start: every temporary of the local folder and of this device's cloud folder of
    /// temporaries (nothing of this daemon is in flight yet); other devices' when stale.
    func removeTemporariesAtStart() {
        state.withLock { $0.nextTemporarySweep = clock.monotonicNow + Self.temporarySweepInterval }
        reportSweep(.local, "left by an interrupted copy") { try local.removeTemporaryFiles() }
        reportSweep(.cloud, "left by an interrupted copy") {
            try cloud.removeTemporaryFiles(in: cloudTemporaryDirectory, .all) + removeStaleTemporariesOfOtherDevices()
        }
        // Not temporaries: what a sync deleted just before a crash, kept for the mass-delete guard.
        adoptKeptDeletions()
    }

    /// Every `temporarySweepInterval`, between passes: this daemon's copy temporaries that are
    /// older than `temporarySafeAge` and not open, anywhere in the local folder and in its
    /// cloud folder of temporaries; other devices' stale ones.
    func sweepTemporariesIfDue() {
        let now = clock.monotonicNow
        let due = state.withLock { s -> Bool in
            guard now >= s.nextTemporarySweep else { return false }
            s.nextTemporarySweep = now + Self.temporarySweepInterval
            return true
        }
        guard due else { return }
        let cleanup = TemporaryCleanup(copiesOnly: true, changedBefore: clock.wallNow - Self.temporarySafeAge,
                                       skipsOpenFiles: true)
        reportSweep(.local, "of interrupted copies") { try local.removeTemporaryFilesEverywhere(cleanup) }
        reportSweep(.cloud, "of interrupted copies") {
            try cloud.removeTemporaryFiles(in: cloudTemporaryDirectory, cleanup) + removeStaleTemporariesOfOtherDevices()
        }
    }

    /// After a local copy failed, and only between passes (no copy of ours is in flight then):
    /// removes the temporary files of our copies wherever they are in the local folder.
    func removeLeftoverCopies() {
        guard leftoverCopiesPossible.exchange(false, ordering: .relaxed) else { return }
        do {
            let removed = try local.removeLeftoverCopies()
            if removed > 0 { log.notice("removed \(removed) temporary file(s) of interrupted downloads from the local folder") }
        } catch {
            log.warning("could not look for temporary files of interrupted downloads in the local folder: \(error)")
        }
    }

    /// The temporaries in other devices' folders of `.nimbus/tmp` that have not changed for
    /// `otherDevicesStaleAge`, and those directly in `.nimbus/tmp` (a Nimbus from before the
    /// folders per device) once it has not changed for as long.
    func removeStaleTemporariesOfOtherDevices() throws -> Int {
        let root = RootMarkers.temporary
        guard let folder = try cloud.metadata(of: root), folder.kind == .directory else { return 0 }
        let staleBefore = clock.wallNow - Self.otherDevicesStaleAge
        let cleanup = TemporaryCleanup(copiesOnly: false, changedBefore: nil, skipsOpenFiles: false)
        var removed = WallInstant(mtime: folder.mtime) < staleBefore ? try cloud.removeTemporaryFiles(in: root, cleanup) : 0
        let own = cloudTemporaryDirectory
        for (path, metadata) in try cloud.scan(root, descend: { _ in false }).entries
        where metadata.kind == .directory && path.parent == root && path != own && WallInstant(mtime: metadata.mtime) < staleBefore {
            if try changedSince(staleBefore, beneath: path) { continue }
            removed += try cloud.removeTemporaryFiles(in: path, cleanup)
        }
        return removed
    }

    /// Whether anything beneath the cloud folder `path` changed since `instant`. A copy in
    /// flight does not always change its device's folder itself: a long copy writes only its
    /// file, and a staged folder's files are created in the staging folder, below it.
    private func changedSince(_ instant: WallInstant, beneath path: RelativePath) throws -> Bool {
        let scan = try cloud.scan(path, descend: { _ in true })
        // What cannot be read may be in use: not stale.
        return !scan.incomplete.isEmpty || scan.entries.contains { WallInstant(mtime: $0.metadata.mtime) >= instant }
    }

    private func reportSweep(_ side: Side, _ what: String, _ body: () throws -> Int) {
        do {
            let removed = try body()
            if removed > 0 { log.notice("removed \(removed) temporary file(s) \(what) in the \(side) folder") }
        } catch {
            log.warning("could not clean temporary files in the \(side) folder: \(error)")
        }
    }
}
