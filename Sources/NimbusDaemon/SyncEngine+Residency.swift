import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// Who asked for a download: a person may go below `min-free-space`, automatic downloads
/// (opening a placeholder) may not. Neither may fill the disk.
public enum DownloadRequest: Sendable {
    case explicit
    case automatic
}

/// Download, evict, pin and unpin (DESIGN §5). All run on the engine thread, between passes.
extension SyncEngine {

    /// Free space no download may take, whoever asked.
    static var hardFreeSpaceReserve: Int64 { 16 << 20 }

    /// Downloads the placeholder at `path`, or every placeholder below the folder `path`, and
    /// returns the entry as it is then.
    public func download(_ path: RelativePath, _ request: DownloadRequest) throws -> EntryInfo? {
        checkOwner()
        if try downloadUnnamedPlaceholder(path, request) { return entry(path) }
        let target = try residentPath(path)
        let placeholders = state.withLock { s in s.index.subtree(target).filter { s.index[$0]!.isPlaceholder } }
        var failures: [String] = []
        do {
            // A suffix placeholder's name goes once its file is downloaded.
            try changingNames(on: [.local]) {
                for file in placeholders {
                    do { try downloadPlaceholder(file, request) } catch let error where !(error is CancellationError) {
                        if placeholders.count == 1 { removeLeftoverCopies(); throw error }
                        failures.append("\(error)")
                    }
                }
            }
        } catch is CancellationError {
            // Stopping: the files downloaded so far are kept, the rest wait for another request.
            commit()
            removeLeftoverCopies()
            throw CancellationError()
        }
        commit()
        removeLeftoverCopies()
        if !failures.isEmpty {
            throw EngineRequestError(kind: .failed, message: "\(failures.count) of \(placeholders.count) files could not be downloaded: "
                                     + failures.prefix(3).joined(separator: "; "))
        }
        enforceCacheBudget(keeping: Set(placeholders))
        return entry(target)
    }

    func downloadPlaceholder(_ path: RelativePath, _ request: DownloadRequest) throws {
        guard let handle = locks.tryLock(path, .exclusive) else {
            throw EngineRequestError(kind: .busy, message: "\(path) is leased by an application; it is downloaded once the lease ends")
        }
        defer { locks.unlock(handle) }
        guard let file = placeholderFile(for: path), let placeholder = try local.metadata(of: file) else {
            throw EngineRequestError(kind: .notFound, message: "the placeholder of \(path) is gone from the local folder")
        }
        if placeholderStyle == .realName, let recorded = state.withLock({ $0.index[path]?.base.local }),
           !placeholder.isUnchanged(from: recorded) && !isGuarded(placeholder, as: recorded) {
            // Written into since (its own content now, or filled): never replaced by a download.
            throw EngineRequestError(kind: .notInSync, message: "\(path) was changed here since it was a placeholder; it is kept, "
                                     + "and synced as a change of its own")
        }
        // The placeholder's folder may be read-only: lent the owner's bits for the download.
        try withFoldersLent(for: .copy(path, to: .local, source: placeholder, replacing: nil)) {
            try replacePlaceholder(path, placeholder, at: file, request)
        }
        updateRecord(path) { record in
            if record.residency == .evicted { record.residency = .auto }
            record.lastOpened = clock.wallNow
        }
        emit(.stateChanged(path, .downloaded))
    }

    /// A cloud file the suffix style cannot stand for here, its name too long for ".nimbus"
    /// (`PlaceholderNameTooLong`): asked for by name, it is downloaded. Returns false for any
    /// other path.
    private func downloadUnnamedPlaceholder(_ path: RelativePath, _ request: DownloadRequest) throws -> Bool {
        guard placeholderStyle.hasNameOfItsOwn, placeholderFile(for: path) == nil, state.withLock({ $0.index[path] }) == nil,
              try local.metadata(of: path) == nil, let source = try cloud.metadata(of: path), source.kind == .file else { return false }
        guard let handle = locks.tryLock(path, .exclusive) else {
            throw EngineRequestError(kind: .busy, message: "\(path) is leased by an application; it is downloaded once the lease ends")
        }
        defer { locks.unlock(handle) }
        try checkFreeSpace(for: path, size: source.size, request)
        log.info("downloading \(path) (\(source.size) bytes), whose name leaves no room for a placeholder")
        var noBatch: [PendingInstall]? = nil
        do {
            try withFoldersLent(for: .copy(path, to: .local, source: source, replacing: nil)) {
                try copy(path, to: .local, source: source, replacing: nil, batch: &noBatch)
            }
        } catch is CancellationError {
            clearTransient(path)
            throw CancellationError()
        } catch {
            throw EngineRequestError(kind: .failed, message: Self.explain(error, action: .copy(path, to: .local, source: source, replacing: nil)))
        }
        clearTransient(path)
        commit()
        emit(.stateChanged(path, .downloaded))
        return true
    }

    /// The download proper: the copy in place of the placeholder `file`, then its removal.
    private func replacePlaceholder(_ path: RelativePath, _ placeholder: FileMetadata, at file: RelativePath,
                                    _ request: DownloadRequest) throws {
        // A cloud change while the file is copied fails the copy: start again from the new version.
        for attempt in 1... {
            guard let source = try cloud.metadata(of: path), source.kind == .file else {
                throw EngineRequestError(kind: .notFound, message: "\(path) is no longer in the cloud folder")
            }
            try checkFreeSpace(for: path, size: source.size, request)
            log.info("downloading \(path) (\(source.size) bytes)")
            var noBatch: [PendingInstall]? = nil
            do {
                // A real-name placeholder is replaced by the download only if it is still the
                // placeholder (or filled meanwhile by an open: the same bytes, same metadata).
                try copy(path, to: .local, source: source, replacing: placeholderStyle == .realName ? placeholder : nil,
                         batch: &noBatch)
                break
            } catch CopyError.sourceChanged where attempt < 5 {
                log.info("\(path) changed in the cloud while it was downloaded; downloading the new version")
            } catch is CancellationError {
                // Stopping mid-copy: no failure of the file's; it stays a placeholder.
                clearTransient(path)
                throw CancellationError()
            } catch {
                let message = Self.explain(error, action: .copy(path, to: .local, source: source, replacing: nil))
                setTransient(path, .error(message))
                throw EngineRequestError(kind: .failed, message: message)
            }
        }
        clearTransient(path)
        if placeholderStyle == .realName {
            marker?.forget(placeholder)
        } else {
            do { try retirePlaceholder(file, expected: placeholder) } catch { log.info("left the placeholder of \(path): \(error)") }
        }
    }

    /// In mirror mode every file is kept here: placeholders left from on-demand mode (not
    /// evicted by the user) are downloaded, within `min-free-space`.
    public func downloadModePlaceholders() {
        checkOwner()
        guard !settings.onDemand else { return }
        let paths = state.withLock { s in
            s.index.all.filter { $0.1.isPlaceholder && $0.1.residency == .auto }.map(\.0).sorted()
        }
        guard !paths.isEmpty else { return }
        log.notice("mirror mode: downloading \(paths.count) file(s) that were placeholders")
        changingNames(on: [.local]) {
            for path in paths {
                do { try downloadPlaceholder(path, .automatic) } catch { log.warning("cannot download \(path): \(error)") }
            }
        }
        commit()
    }

    /// Refuses a download that would leave less than `min-free-space` (automatic) or the hard
    /// reserve (a person's request) free on the local disk.
    func checkFreeSpace(for path: RelativePath, size: Int64, _ request: DownloadRequest) throws {
        let reserve = request == .explicit ? Self.hardFreeSpaceReserve : max(settings.minFreeSpace, Self.hardFreeSpaceReserve)
        let available = try local.spaceInfo().available
        guard available - size < reserve else { return }
        let message = "not enough space to download \(path): it needs \(Self.bytes(size)), \(Self.bytes(available)) are free, and "
            + (request == .explicit ? "\(Self.bytes(reserve)) must stay free" : "automatic downloads keep min-free-space = \(Self.bytes(reserve)) free")
            + ". Free some space or evict files (nimbusctl evict)" + (request == .automatic ? ", or download it with nimbusctl download" : "")
        setTransient(path, .error(message))
        emit(.error(path, message))
        throw EngineRequestError(kind: .noSpace, message: message)
    }

    /// Replaces the local copy of `path` (or of every file below the folder `path`) by a
    /// placeholder. Refused for a file that is pinned, not in sync, or open in some process.
    public func evict(_ path: RelativePath, automatic: Bool = false) throws -> EntryInfo? {
        checkOwner()
        let target = try residentPath(path)
        let files = state.withLock { s in
            s.index.subtree(target).filter { s.index[$0]!.base.kind == .file && !s.index[$0]!.isPlaceholder }
        }
        let open = ProcessSupport.openFiles()
        var refusals: [EngineRequestError] = []
        try changingNames(on: [.local]) {
            for file in files {
                do { try evictFile(file, openFiles: open, automatic: automatic) } catch let error as EngineRequestError {
                    if files.count == 1 || target == file { throw error }
                    refusals.append(error)
                }
            }
        }
        commit()
        if let first = refusals.first {
            throw EngineRequestError(kind: first.kind, message: "\(refusals.count) of \(files.count) files were not evicted; "
                                     + refusals.prefix(3).map(\.message).joined(separator: "; "))
        }
        return entry(target)
    }

    func evictFile(_ path: RelativePath, openFiles: Set<FileIdentity>, automatic: Bool) throws {
        guard let record = state.withLock({ $0.index[path] }) else { return }
        if placeholderStyle == .realName && marker == nil {
            throw EngineRequestError(kind: .failed, message: "\(PlaceholderStyleUnavailable(path: path, style: .realName))")
        }
        let here = try local.metadata(of: path)
        let there = try cloud.metadata(of: path)
        let plan = planEviction(path, style: placeholderStyle, base: record.base, here: here, there: there,
                                pinned: record.residency == .pinned || isPinnedByFolder(path), hasConflict: record.conflictCopy != nil,
                                inProgress: state.withLock({ $0.transient[path] }) != nil,
                                // /proc shows only the programs this daemon may inspect (after dropping
                                // its capabilities, not a privileged one's): the kernel's lease answer
                                // covers the rest.
                                isOpen: { openFiles.contains(FileIdentity(device: $0.device, inode: $0.inode))
                                          || local.isOpenElsewhere(path) == true },
                                isTaken: { name in state.withLock { $0.index[name] != nil } || existsOnEitherSide(name) })
        let action: Action
        switch plan {
        case .failure(.noRoomForPlaceholder):
            throw EngineRequestError(kind: .invalidArgument, message: "\(path) cannot be evicted: its name leaves no room for "
                                     + "the .nimbus of a placeholder (255 bytes at most), so it is always kept here")
        case .failure(.placeholderNameTaken):
            throw EngineRequestError(kind: .invalidArgument, message: "\(path) cannot be evicted: the name of its placeholder, "
                                     + "\(Placeholder.file(for: path).map { "\($0)" } ?? ""), is another file's or folder's, so it is kept here")
        case .failure(.pinned):
            throw EngineRequestError(kind: .pinned, message: "\(path) is pinned: unpin it first (nimbusctl unpin)")
        case .failure(.notInSync):
            throw EngineRequestError(kind: .notInSync, message: "\(path) is not in sync (it has changes not yet uploaded or downloaded); "
                                     + "evict it once sync is done")
        case .failure(.isOpen):
            throw EngineRequestError(kind: .inUse, message: "\(path) is open in a program; close it and evict again")
        case .success(let planned):
            action = planned
        }
        guard let handle = locks.tryLock(path, .exclusive) else {
            throw EngineRequestError(kind: .busy, message: "\(path) is leased by an application")
        }
        defer { locks.unlock(handle) }
        var noBatch: [PendingInstall]? = nil
        try withFoldersLent(for: action) { try performPlaceholderAction(action, batch: &noBatch) }
        let size = here?.size ?? 0
        log.info("evicted \(path)\(automatic ? " (cache budget)" : ""): \(Self.bytes(size)) freed")
        emit(.stateChanged(path, .notDownloaded))
    }

    /// Marks `path` (a file or a folder) as always kept locally and downloads what is only a
    /// placeholder below it.
    public func pin(_ path: RelativePath) throws -> EntryInfo? {
        checkOwner()
        guard !path.isRoot else {
            throw EngineRequestError(kind: .invalidArgument, message: "the whole folder cannot be pinned: to keep every file here, "
                                     + "run nimbusd in mirror mode (mode = mirror in [pair])")
        }
        let target = try residentPath(path)
        updateRecord(target) { $0.residency = .pinned }
        commit()
        return try download(target, .explicit)
    }

    /// Lets `path` and everything below it follow the mode and the cache budget again.
    public func unpin(_ path: RelativePath) throws -> EntryInfo? {
        checkOwner()
        let target = try residentPath(path)
        let pinned = state.withLock { s in s.index.subtree(target).filter { s.index[$0]!.residency == .pinned } }
        for path in pinned { updateRecord(path) { $0.residency = .auto } }
        commit()
        return entry(target)
    }

    /// The synced path a request names: `report.pdf.nimbus` names `report.pdf`.
    func residentPath(_ path: RelativePath) throws -> RelativePath {
        let known = state.withLock { s -> RelativePath? in
            if path.isRoot || s.index[path] != nil { return path }
            if let target = Placeholder.target(of: path), s.index[target] != nil { return target }
            return nil
        }
        guard let known else {
            throw EngineRequestError(kind: .notFound, message: "\(path) is not a synced file or folder")
        }
        return known
    }

    /// Notes that a program opened `path` (for the cache budget's "least recently opened").
    /// Written at most once a second per file, so a busy file costs the journal little.
    public func noteOpened(_ path: RelativePath) {
        checkOwner()
        let now = clock.wallNow
        let stale = state.withLock { s in s.index[path].map { now - $0.lastOpened > .seconds(1) } ?? false }
        guard stale else { return }
        // Journaled only when a budget reads it: without one, opens (ours included) cost no
        // journal writes, and the time is still there if a budget is set by a reload.
        if settings.cacheLimit != nil || settings.evictAfter != nil {
            updateRecord(path) { $0.lastOpened = now }
        } else {
            state.withLock { s in s.index[path]?.lastOpened = now }
        }
    }

    static func bytes(_ count: Int64) -> String {
        let units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 { value /= 1024; unit += 1 }
        return unit == 0 ? "\(count) bytes" : String(Int(value * 10) / 10) + "." + String(Int(value * 10) % 10) + " " + units[unit]
    }
}
