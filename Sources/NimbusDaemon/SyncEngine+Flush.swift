import NimbusCore
import NimbusSystem
import NimbusVocabulary

extension SyncEngine {
    /// Flushes the folders of `sides`, one `synchronize` per filesystem; returns the sides
    /// whose flush failed, with the error.
    ///
    /// `synchronize` is syncfs(2), which makes a whole filesystem durable, and two folders
    /// with the same `st_dev` are on the same one (the same superblock: two folders of one
    /// disk, a bind mount): flushing one makes everything written in the other durable too,
    /// so that filesystem is flushed once and a failure counts for both (issue 15). Folders
    /// on two filesystems, or whose device cannot be read, are flushed each on its own.
    func flush(_ sides: Set<Side>) -> [Side: any Error] {
        var failed: [Side: any Error] = [:]
        for group in filesystems(of: sides) {
            do {
                try system(group[0]).synchronize()
            } catch {
                for side in group { failed[side] = error }
            }
        }
        noteLocalMarkerFlushed(by: sides.subtracting(failed.keys))
        state.withLock { $0.changesAwaitFlush.subtract(sides.subtracting(failed.keys)) }
        return failed
    }

    /// Notes that names or modes changed on `sides` and are not flushed yet: the journal's
    /// next commit flushes those sides first (`commit`), one flush per filesystem for all.
    func awaitFlushBeforeCommit(_ sides: Set<Side>) {
        state.withLock { $0.changesAwaitFlush.formUnion(sides) }
    }

    /// Runs `change`, which changes names or modes on `sides` outside a pass (a control
    /// command: download, evict, resolve, restore, revert-deletes; the cache budget; a style
    /// conversion), in a pass's order: its changes are flushed before the journal's next
    /// commit, the command's own or, when it fails halfway, any later one. Without it, a
    /// command's commit could be durable before the rename it records, and a crash that lost
    /// the rename would leave a journal saying the file is synced where it is missing.
    /// Noted after `change`: a commit inside it (an eviction records the placeholder it made
    /// durable before the file goes) needs no flush of what is still to come.
    func changingNames<Result>(on sides: Set<Side>, _ change: () throws -> Result) rethrows -> Result {
        defer { awaitFlushBeforeCommit(sides) }
        return try change()
    }

    /// A local marker waiting for a flush (`RootMarkers.check`) is durable once the local
    /// filesystem was flushed: through the local folder, or through the cloud's when both are
    /// on one.
    private func noteLocalMarkerFlushed(by flushed: Set<Side>) {
        guard !flushed.isEmpty, state.withLock({ $0.localMarkerAwaitsFlush }),
              flushed.contains(.local) || filesystems(of: Set(Side.allCases)).count == 1 else { return }
        state.withLock { $0.localMarkerAwaitsFlush = false }
    }

    /// `sides` grouped by the filesystem their folders are on.
    private func filesystems(of sides: Set<Side>) -> [[Side]] {
        let ordered = Side.allCases.filter(sides.contains)
        guard ordered.count == 2, let here = try? local.metadata(of: .root), let there = try? cloud.metadata(of: .root),
              here.device == there.device else { return ordered.map { [$0] } }
        return [ordered]
    }
}
