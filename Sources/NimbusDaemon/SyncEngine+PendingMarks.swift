import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// The state marks of uploaded files, written after the pass's commit (issue 15).
///
/// An upload leaves the user's local file as it was, except for its `user.nimbus.state` xattr
/// (DESIGN §2). Written inside the pass, the marks of a first sync of 1 000 files took about
/// 4 ms between the two flushes, and the flush of the names and the journal's commit then had
/// 1 000 more inodes to write. Now they are written once the pass is committed: at the end of
/// the pass, or for the first pass, by the runtime once it has told systemd it is ready; a stop
/// writes those still pending. What `status` and the control socket say comes from the journal's
/// index and is right all along; only the xattr lags, by the time between the commit and then.
///
/// A crash between the commit and the marks loses only marks, never a file's state in the
/// journal: the commit that leaves marks pending notes it (`RecordStore.marksMayBeMissing`),
/// and a start that finds the note marks every synced file again, reading each mark first.
extension SyncEngine {
    /// Writes the marks of the files uploaded since the last call, as their state is now (a
    /// conflict or an error since the upload wins over `downloaded`), and clears the note.
    func writePendingMarks() {
        checkOwner()
        let marks = state.withLock { s in
            defer { s.pendingMarks = [] }
            return s.pendingMarks
        }
        let written = markStates(marks.compactMap { mark in
            let (record, transient) = state.withLock { ($0.index[mark.path], $0.transient[mark.path]) }
            // Gone since, or a placeholder now (evicted): whatever made it so wrote its mark.
            guard let record, !record.isPlaceholder, record.base.kind == .file,
                  let now = Self.describe(mark.path, current: nil, record: record, transient: transient)?.state else { return nil }
            return (mark.path, now, mark.isUnmarked && now == .downloaded)
        })
        expectEchoes(of: written, on: .local)
        if store.marksMayBeMissing { store.marksMayBeMissing = false }
    }

    /// After a crash that may have lost marks: every synced file (not the placeholders, whose
    /// marks are written with them) is marked again after the first pass. Each mark is read
    /// first, so a file that has its mark is not touched.
    func markEverySyncedFileAgain() {
        state.withLock { s in
            for (path, record) in s.index.all where record.base.kind == .file && !record.isPlaceholder {
                s.pendingMarks.append((path, false))
            }
        }
    }
}
