import NimbusCore
import NimbusSystem
import NimbusVocabulary

// The watchers report the engine's own changes too: each state mark it writes is an
// `IN_ATTRIB` of a local file, each folder it uploads whole (`SyncEngine+Staging`) arrives
// in the cloud folder by a rename, with an event for every entry inside, each copy it installs
// arrives by a rename from its temporary file, and each folder it makes is created, its
// entries found by the watcher as created too. After the first sync of 100 000 files, those
// echoes brought a second pass over every file just synced, which found nothing to do: 2.2 s
// of CPU after READY=1, and 120 MiB more memory at its peak (an upload; a download of 10 000
// files still had that pass over 10 101 paths, 13 % of its CPU time, until its installs and
// folders were noted too).
//
// So what the engine changes is noted as expected (`echoes`), and an event of a noted kind
// at a noted path is passed over when the entry is still what the journal recorded: the same
// inode, kind, mode, size and mtime (`FileMetadata.isUnchanged`), and not a record the pass
// itself would verify by content (`BaseEntry.isAmbiguous`). That is the same comparison a pass
// would make, so a change the user made meanwhile, which inotify may have merged into the
// echo, still brings a pass. The notes go when the next pass begins: an echo read later only
// costs the pass it always did.
extension SyncEngine {
    /// Notes the paths this engine has just changed on `side`, whose events are its own.
    func expectEchoes(of paths: some Sequence<RelativePath>, on side: Side) {
        state.withLock { s in for path in paths { s.echoes.insert(SidePath(side, path)) } }
    }

    /// Forgets the echoes expected of the last pass (called as a pass begins).
    func forgetEchoes() {
        state.withLock { s in if !s.echoes.isEmpty { s.echoes = [] } }
    }

    /// Whether an event at `path` on `side` can only be the echo of this engine's own change.
    func isOwnEcho(_ path: RelativePath, on side: Side) -> Bool {
        checkOwner()
        guard state.withLock({ $0.echoes.contains(SidePath(side, path)) }) else { return false }
        return isAsRecorded(path, on: side)
    }

    /// Whether the entry at `path` on `side` is exactly what the journal recorded there, by
    /// the comparison a pass makes (one lstat).
    func isAsRecorded(_ path: RelativePath, on side: Side) -> Bool {
        checkOwner()
        guard let record = state.withLock({ $0.index[path] }), !record.isPlaceholder, !record.base.isAmbiguous,
              let current = try? system(side).metadata(of: path) else { return false }
        return current.isUnchanged(from: record.base[side])
    }
}

extension WatchEvent.Kind {
    /// The kinds of event the engine's own changes bring: a mark written (`IN_ATTRIB`), a copy
    /// renamed into place from its temporary file, whose name is never reported, or a folder
    /// uploaded whole from `.nimbus/tmp`, which is not watched (`IN_MOVED_TO`), a folder made,
    /// and what the watcher finds in it (created).
    var mayEchoOwnChange: Bool {
        switch self {
        case .attributesChanged, .movedTo, .created: true
        default: false
        }
    }
}
