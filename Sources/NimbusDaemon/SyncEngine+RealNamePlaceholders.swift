import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// The executor's real-name placeholders (DESIGN §5): `dir/report.pdf` itself, sparse, with
/// the cloud file's size, mtime and mode, marked so that opening it fills it. Written like a
/// download (a temporary file, then an install that replaces only what the plan expected),
/// evicted in place under its mark, and known to the listener (`marker`) by inode for as
/// long as it is not downloaded.
extension SyncEngine {
    /// The pair's marker, set by the runtime when the real-name style is in use.
    public var marker: (any PlaceholderMarker)? {
        get { markerBox.withLock { $0 } }
        set { markerBox.withLock { $0 = newValue } }
    }

    func requireMarker(for path: RelativePath) throws -> any PlaceholderMarker {
        guard let marker else { throw PlaceholderStyleUnavailable(path: path, style: .realName) }
        return marker
    }

    func performRealNamePlaceholder(_ action: Action, batch: inout [PendingInstall]?) throws {
        switch action {
        case .writePlaceholder(let path, let source, let replacing):
            try writeRealNamePlaceholder(path, source: source, replacing: replacing, batch: &batch)
        case .removePlaceholder(let path, let expected):
            try removeUnchanged(path, expected: expected)
            marker?.forget(expected)
            if state.withLock({ $0.index[path]?.isPlaceholder }) == true { setRecord(path, nil) }
            emit(.removed(path, on: .local))
        case .renamePlaceholder(let from, let to, let expected):
            let cloudFile = state.withLock { $0.index[from]?.base.cloud }
            try expect(from, on: .local, expected)
            try local.rename(from, to: to, replacing: false)
            rekey(from: from, to: to)
            // The mark stays on the inode; the listener learns the new name.
            if let cloudFile { marker?.register(to, local: expected, cloud: cloudFile) }
            emit(.renamed(from: from, to: to, on: .local))
        case .evict(let path, let here, let there):
            try evictInPlace(path, expected: here, cloud: there)
        case .adoptLocalFile(let path, let here, let there):
            try adoptLocalFile(path, local: here, cloud: there)
        default:
            // The suffix style's own repairs (move, adopt a placeholder file) are never
            // planned for real names: the fold knows these by the journal alone.
            preconditionFailure("not a real-name placeholder action: \(action)")
        }
    }

    /// A placeholder at `path` for `source`, replacing `replacing` (an older placeholder,
    /// a stray) only if it is still exactly that.
    func writeRealNamePlaceholder(_ path: RelativePath, source: FileMetadata, replacing: FileMetadata?,
                                  batch: inout [PendingInstall]?) throws {
        let marker = try requireMarker(for: path)
        try expect(path, on: .cloud, source)
        try expect(path, on: .local, replacing)
        let prepared = try marker.prepare(path, cloud: source, durable: batch == nil)
        let pending = PendingInstall(path: path, side: .local, prepared: prepared, replacing: replacing, source: source,
                                     placeholder: path)
        if batch != nil { batch!.append(pending) } else { try install(pending, durable: true) }
    }

    /// Evicts `path` in place: the journal says placeholder before the content goes, so a
    /// crash in between leaves a complete file the next start marks (and fills again, with
    /// the same bytes, when opened); never a hole the journal takes for content.
    func evictInPlace(_ path: RelativePath, expected here: FileMetadata, cloud there: FileMetadata) throws {
        let marker = try requireMarker(for: path)
        guard let record = state.withLock({ $0.index[path] }) else { return }
        let punched: FileMetadata
        do {
            punched = try marker.punchOut(path, expected: here, cloud: there) {
                updateRecord(path) { record in
                    record.base = BaseEntry(local: here, cloud: there)
                    record.isPlaceholder = true
                    record.residency = .evicted
                }
                commit()
            }
        } catch DiskFileSystem.PunchRefusal.changed {
            throw EngineRequestError(kind: .notInSync, message: "\(path) changed while it was evicted; it is kept")
        } catch DiskFileSystem.PunchRefusal.openElsewhere {
            throw EngineRequestError(kind: .inUse, message: "\(path) is open in a program; close it and evict again")
        } catch {
            if state.withLock({ $0.index[path]?.isPlaceholder }) == true {
                setRecord(path, record)
                commit()
            }
            throw error
        }
        updateRecord(path) { $0.base = BaseEntry(local: punched, cloud: there) }
    }

    /// Converts the placeholder of `path` to `style` (DESIGN §5, a pair switching styles):
    /// the new placeholder is written and journaled first, then the old one removed if it is
    /// still what the journal says. Nothing is downloaded.
    func convertPlaceholder(_ path: RelativePath, to style: PlaceholderStyle, expected: FileMetadata,
                            cloud cloudFile: FileMetadata) throws {
        guard let old = style == .realName ? Placeholder.file(for: path) : path,
              let new = style == .realName ? path : Placeholder.file(for: path) else { return }
        try expect(old, on: .local, expected)
        let installed: FileMetadata
        switch style {
        case .realName:
            let marker = try requireMarker(for: path)
            let prepared = try marker.prepare(path, cloud: cloudFile, durable: true)
            do {
                installed = try local.install(prepared, at: new, replacing: leftoverPlaceholder(at: new, of: path, cloud: cloudFile),
                                              displacedTo: nil, durable: true)
            } catch {
                local.discard(prepared)
                marker.forget(prepared.source)
                throw error
            }
        case .suffix:
            let prepared = try local.prepareFile(near: new, contents: Placeholder.contents(for: path, cloud: cloudFile), mode: 0o644,
                                                 mtime: cloudFile.mtime, attributes: Placeholder.attributes(cloud: cloudFile),
                                                 durable: true)
            do {
                installed = try local.install(prepared, at: new, replacing: leftoverPlaceholder(at: new, of: path, cloud: cloudFile),
                                              displacedTo: nil, durable: true)
            } catch {
                local.discard(prepared)
                throw error
            }
        }
        updateRecord(path) { record in
            record.base = BaseEntry(local: installed, cloud: cloudFile)
            record.isPlaceholder = true
        }
        commit()
        do {
            try removeUnchanged(old, expected: expected)
            if style == .suffix { marker?.forget(expected) }
        } catch {
            log.warning("converted the placeholder of \(path) to the \(style == .realName ? "real-name" : "suffix") style, "
                        + "but the old one stays at \(old): \(error)")
        }
    }

    /// A placeholder of `path` for `cloudFile` in the other style, left at `file` by a
    /// conversion a crash interrupted before the journal said so: replaced by the same
    /// conversion again. nil when `file` holds nothing of the kind (then nothing is replaced).
    func leftoverPlaceholder(at file: RelativePath, of path: RelativePath, cloud cloudFile: FileMetadata) -> FileMetadata? {
        guard let found = try? local.metadata(of: file), found.kind == .file else { return nil }
        if file == path {
            // Real name: sparse, the cloud file's size and mtime, and still saying notDownloaded.
            let state = try? local.extendedAttribute(Placeholder.stateAttribute, of: file)
            return found.size == cloudFile.size && found.mtime == cloudFile.mtime
                && state == Array(FileState.notDownloaded.name.utf8) ? found : nil
        }
        guard let text = try? local.readFile(file, limit: Placeholder.maximumSize) else { return nil }
        return Placeholder.matches(text, for: path, cloud: cloudFile) ? found : nil
    }
}
