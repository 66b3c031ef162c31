import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// Placeholders across the daemon's life (DESIGN §5): at start, before any pass, placeholders
/// written in another style (a pair that switched, a daemon that lost its privilege) are
/// converted, and real-name ones are marked again (the marks died with the last group) and
/// given their permissions back; at a clean stop they are guarded; in between, what the
/// listener fills is journaled as downloaded.
extension SyncEngine {
    /// Converts and marks the journal's placeholders; returns how many were converted.
    @discardableResult
    public func preparePlaceholders() -> Int {
        checkOwner()
        let records = state.withLock { s in s.index.all.filter { $0.1.isPlaceholder }.map { ($0.0, $0.1) } }
        guard !records.isEmpty else { return 0 }
        let current = placeholderStyle
        var byStyle: [PlaceholderStyle: [RelativePath: PlaceholderRecord]] = [:]
        var names: [RelativePath: FileMetadata] = [:]
        var toMark: [(path: RelativePath, current: FileMetadata, record: PathRecord)] = []
        for (path, record) in records {
            for style in PlaceholderStyle.allCases {
                guard let file = style.file(for: path), var found = try? local.metadata(of: file) else { continue }
                if style == .realName, current == .realName, !found.isUnchanged(from: record.base.local), let marker,
                   let undone = marker.undoInterruptedFill(path, current: found, recorded: record.base.local, cloud: record.base.cloud) {
                    log.notice("\(path): a fill cut short when nimbusd last stopped held only the cloud's bytes: "
                               + "it is a whole not-downloaded file again, not an edit")
                    found = undone
                }
                // The new style's file a crash left before the journal said so: the conversion
                // replaces it. (Asked last: reading a suffix placeholder is an open, which the
                // watcher would take for a program's.)
                if style == current, found.inode != record.base.local.inode,
                   leftoverPlaceholder(at: file, of: path, cloud: record.base.cloud) != nil {
                    continue
                }
                names[file] = found
                guard found.kind == .file, NimbusCore.isGuarded(found, as: record.base.local) || found.isUnchanged(from: record.base.local)
                else { continue }
                var seen = record.base
                seen.local = found
                byStyle[style, default: [:]][path] = PlaceholderRecord(base: seen, isPlaceholder: true)
                if style == .realName && current == .realName { toMark.append((path, found, record)) }
            }
        }
        var converted = 0
        for (style, group) in byStyle where style != current {
            let conversion = planPlaceholderConversion(from: style, to: current, records: group, local: names)
            for action in conversion.actions {
                guard let handle = locks.tryLock(action.path, .exclusive) else { continue }
                defer { locks.unlock(handle) }
                var noBatch: [PendingInstall]? = nil
                do {
                    try changingNames(on: [.local]) { try performPlaceholderAction(action, batch: &noBatch) }
                    converted += 1
                } catch {
                    log.warning("cannot convert the placeholder of \(action.path): \(error)")
                }
            }
            for (path, block) in conversion.blocked.sorted(by: { $0.key < $1.key }) {
                log.notice("the placeholder of \(path) keeps the \(style == .realName ? "real-name" : "suffix") style for now: \(block)")
            }
            commit()
        }
        if converted > 0 {
            log.notice("converted \(converted) placeholder(s) to the \(current == .realName ? "real-name" : "suffix") style; nothing was downloaded")
        }
        for item in toMark { markAgain(item.path, current: item.current, record: item.record) }
        return converted
    }

    /// Marks a real-name placeholder the journal knows again and makes it known to the
    /// listener; a guarded one gets its mode back only once marked.
    func markAgain(_ path: RelativePath, current: FileMetadata, record: PathRecord) {
        guard let marker else { return }
        if (try? local.extendedAttribute(Placeholder.stateAttribute, of: path)) == Array(FileState.downloaded.name.utf8),
           current.mode != 0 {
            // Filled just before a stop, before the journal said so: content, not a placeholder.
            updateRecord(path) { $0.isPlaceholder = false }
            return
        }
        do {
            try marker.adopt(path, current: current, recorded: record.base.local, cloud: record.base.cloud)
        } catch {
            log.warning("cannot mark the not-downloaded \(path) (opening it will not fetch it; it stays guarded): \(error)")
        }
    }

    /// At a clean stop: every real-name placeholder loses its permission bits (its mode kept in
    /// `user.nimbus.mode` and the journal), so that nobody reads its holes while no daemon
    /// listens. Called while the listener still answers.
    public func guardPlaceholders() {
        checkOwner()
        guard placeholderStyle == .realName, let marker else { return }
        let paths = state.withLock { s in s.index.all.filter { $0.1.isPlaceholder }.map { ($0.0, $0.1.base.local) } }
        var failed = 0
        for (path, recorded) in paths {
            guard let found = try? local.metadata(of: path), found.isUnchanged(from: recorded) else { continue }
            do { try marker.guardReading(path) } catch {
                failed += 1
                log.warning("cannot guard the not-downloaded \(path): \(error)")
            }
        }
        if failed > 0 { log.warning("\(failed) not-downloaded file(s) are not guarded and read as zeros until nimbusd runs again") }
    }

    /// What the listener did with a real-name placeholder a program opened.
    public func applyHydration(_ outcome: HydrationServer.Outcome) {
        checkOwner()
        switch outcome {
        case .filled(let placeholder, let filled):
            let path = placeholder.path
            guard let record = state.withLock({ $0.index[path] }), record.isPlaceholder,
                  record.base.local.inode == filled.inode else { return }
            updateRecord(path) { record in
                record.isPlaceholder = false
                record.base.local = filled
                if record.residency == .evicted { record.residency = .auto }
                record.lastOpened = clock.wallNow
            }
            commit()
            clearTransient(path)
            emit(.stateChanged(path, .downloaded))
            log.info("\(path) was opened: downloaded (\(Self.bytes(filled.size)))")
            enforceCacheBudget(keeping: [path])
        case .changedLocally(let placeholder):
            log.info("\(placeholder.path) was changed while no daemon listened: it is content of its own now, not downloaded")
            sync([placeholder.path])
        case .failed(let placeholder, _, let message):
            setTransient(placeholder.path, .error(message))
            emit(.error(placeholder.path, message))
        }
    }

    /// A fill's progress, for `watch` and `status`.
    public func noteHydrationProgress(_ path: RelativePath, done: Int64, of size: Int64) {
        setTransient(path, .downloading(progress: Double(done) / Double(max(size, 1))))
    }
}
