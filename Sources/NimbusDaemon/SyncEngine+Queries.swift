import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// One path as the control protocol shows it.
public struct EntryInfo: Hashable, Sendable {
    public var path: RelativePath
    public var kind: FileKind
    public var size: Int64
    public var mtime: Int64
    public var state: FileState
    public var conflictCopy: RelativePath?
    public var residency: Residency
}

/// Something that happened, for `watch` subscribers.
public enum EngineEvent: Sendable, Hashable {
    case stateChanged(RelativePath, FileState)
    case conflict(RelativePath, copy: RelativePath)
    case error(RelativePath, String)
    case phase(EnginePhase)
    /// The engine deleted `path` on `side` (following a deletion on the other side).
    case removed(RelativePath, on: Side)
    /// The engine renamed `from` to `to` on `side` (following a rename on the other side).
    case renamed(from: RelativePath, to: RelativePath, on: Side)
    /// The mass-delete guard newly held these deletions on `side` until the user decides;
    /// `alreadyApplied` deletions made there within its window are kept and undone with them.
    case deletionsHeld(on: Side, [RelativePath], alreadyApplied: Int = 0)
    /// Opening placeholders was refused past `open-rate-limit` (once per storm): `program`
    /// opened `path`.
    case fetchesRefused(RelativePath, limit: Int, program: String?)
}

public enum ConflictChoice: String, Sendable, CaseIterable {
    /// Keep this device's version (the conflict copy) under the original name.
    case local
    /// Keep the cloud's version, which already has the name; the conflict copy is removed
    /// (it stays in the cloud's versions store).
    case cloud
    /// Keep both: the conflict copy stays as a file of its own.
    case both
}

public struct EngineRequestError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable { case notFound, notInConflict, invalidArgument, failed, busy, notInSync, pinned, inUse, noSpace, paused }
    public var kind: Kind
    public var message: String
    public var description: String { message }
}

extension SyncEngine {
    /// The state of `path`, from the index, the transient states and what is on disk; nil for
    /// Nimbus's own names (`isNimbusOwn`), which are not the user's files.
    public func entry(_ path: RelativePath) -> EntryInfo? {
        Self.isNimbusOwn(path) ? nil : entry(path, local: nil)
    }

    /// `local`: what the local folder holds at `path`, when the caller knows it (else it is read).
    func entry(_ path: RelativePath, local known: FileMetadata?) -> EntryInfo? {
        let (record, transient) = state.withLock { ($0.index[path], $0.transient[path]) }
        let current = known ?? (try? local.metadata(of: path))
        if let described = Self.describe(path, current: current, record: record, transient: transient) { return described }
        // Nothing here, nothing recorded, but failed: a cloud file that could not come here
        // (`PlaceholderNameTooLong`, a download refused), shown with the cloud's metadata.
        guard current == nil, record == nil, let transient, transient.message != nil,
              let cloudFile = try? cloud.metadata(of: path) else { return nil }
        return EntryInfo(path: path, kind: cloudFile.kind, size: cloudFile.size, mtime: cloudFile.mtime, state: transient,
                         conflictCopy: nil, residency: .auto)
    }

    /// The one rule for a path's state: in progress or failed (transient) first, then
    /// conflict, then in sync unless it changed here since (waiting to upload: `local`).
    static func describe(_ path: RelativePath, current: FileMetadata?, record: PathRecord?,
                         transient: FileState?) -> EntryInfo? {
        // A suffix placeholder leaves the name empty; a real-name one is the file itself,
        // unchanged (or only guarded) since the journal recorded it.
        if let record, record.isPlaceholder,
           current.map({ $0.isUnchanged(from: record.base.local) || isGuarded($0, as: record.base.local) }) ?? true {
            let cloud = record.base.cloud
            return EntryInfo(path: path, kind: .file, size: cloud.size, mtime: cloud.mtime, state: transient ?? .notDownloaded,
                             conflictCopy: nil, residency: record.residency)
        }
        guard let meta = current ?? record?.base.local else { return nil }
        var fileState: FileState = .local
        if let transient {
            fileState = transient
        } else if let record {
            if record.conflictCopy != nil {
                fileState = .conflict
            } else if let current, !current.isUnchanged(from: record.base.local) {
                fileState = .local
            } else {
                fileState = .downloaded
            }
        }
        return EntryInfo(path: path, kind: meta.kind, size: meta.kind == .file ? meta.size : 0, mtime: meta.mtime,
                         state: fileState, conflictCopy: record?.conflictCopy, residency: record?.residency ?? .auto)
    }

    func isExcluded(_ path: RelativePath) -> Bool {
        path == RootMarkers.local || path == RootMarkers.cloudDirectory || TemporaryName.isTemporary(path.name)
    }

    /// Whether `path` is one of Nimbus's own names in the local folder or lies inside one
    /// (`RootMarkers.ownName`). Queries never show them as the user's files.
    static func isNimbusOwn(_ path: RelativePath) -> Bool { RootMarkers.ownName(path) != nil }

    public func conflicts() -> [Conflict] {
        state.withLock { s in
            s.index.all.compactMap { path, record in record.conflictCopy.map { Conflict(path: path, conflictCopy: $0) } }
        }.sorted { $0.path < $1.path }
    }

    /// Settles a conflict. Runs on the engine thread (`PairRuntime.perform`).
    public func resolve(_ path: RelativePath, keep choice: ConflictChoice) throws {
        checkOwner()
        guard let copy = state.withLock({ $0.index[path]?.conflictCopy }) else {
            throw EngineRequestError(kind: .notInConflict, message: "\(path) is not in conflict")
        }
        // The folders of the two names may be read-only (`FolderModes`); the names changed
        // are flushed before the commit that records the conflict settled.
        try changingNames(on: choice == .both ? [] : Set(Side.allCases)) {
            try withFoldersLent([path.parent, copy.parent]) { try settle(path, copy: copy, keep: choice) }
        }
        updateRecord(path) { $0.conflictCopy = nil }
        publishState(of: path)
        commit()
        sync([path, copy])
    }

    /// What `resolve` does on disk for `choice`.
    private func settle(_ path: RelativePath, copy: RelativePath, keep choice: ConflictChoice) throws {
        switch choice {
        case .both:
            break
        case .cloud:
            try refuseIfOpenForWriting(copy)
            try keepConflictCopyAsVersion(copy, of: path)
        case .local:
            guard try local.metadata(of: copy) != nil else {
                throw EngineRequestError(kind: .notFound, message: "the conflict copy \(copy) is gone; nothing to keep")
            }
            try refuseIfOpenForWriting(path)
            try keepLocalEditAsVersion(of: path)
            try local.rename(copy, to: path, replacing: true)
        }
    }

    /// A request that would delete or replace a local file a program is writing to is refused:
    /// the program's later writes would be lost. The user closes it and asks again.
    func refuseIfOpenForWriting(_ path: RelativePath) throws {
        guard local.isOpenForWriting(path) else { return }
        throw EngineRequestError(kind: .inUse, message: "\(path) is open for writing in a program; close it and try again")
    }

    /// `resolve --keep local` replaces the file at `path`, which holds the cloud's version. That
    /// version is in the cloud; but a file edited here since the conflict holds an edit found
    /// nowhere else, so it is filed in the versions store under `path` first.
    func keepLocalEditAsVersion(of path: RelativePath) throws {
        guard let here = try local.metadata(of: path), here.kind == .file else { return }
        let base = state.withLock { $0.index[path]?.base }
        if let base, here.isUnchanged(from: base.local) { return }
        try copyLocalFileToVersions(path, metadata: here, filedUnder: path, attempt: 1)
    }

    /// Copies the local file `source` into the versions store, filed under `path`.
    func copyLocalFileToVersions(_ source: RelativePath, metadata: FileMetadata, filedUnder path: RelativePath,
                                 attempt: Int) throws {
        let store = VersionStore(device: settings.deviceName)
        let location = store.location(for: path, at: clock.wallNow, attempt: attempt)
        try makeDirectories(location.parent, in: cloud)
        let prepared = try cloud.prepareCopy(of: source, from: local, expected: metadata, durable: true) { _ in }
        do {
            _ = try cloud.install(prepared, at: location, replacing: nil, displacedTo: nil, durable: true)
        } catch {
            cloud.discard(prepared)
            throw error
        }
        noteVersionKept(size: metadata.size)
    }

    /// `resolve --keep cloud`: this device's version (the conflict copy) goes to the versions
    /// store filed under `path`, the name the user knows it by, then the copy is removed on
    /// both sides. Its content is never lost: the cloud's copy is moved there, and a local
    /// copy that was not uploaded as it is now is copied there first.
    func keepConflictCopyAsVersion(_ copy: RelativePath, of path: RelativePath) throws {
        let here = try local.metadata(of: copy)
        let there = try cloud.metadata(of: copy)
        let base = state.withLock { $0.index[copy]?.base }
        let uploaded = here != nil && there != nil && base.map { here!.isUnchanged(from: $0.local) && there!.isUnchanged(from: $0.cloud) } == true
        if let here, here.kind == .file, !uploaded {
            try copyLocalFileToVersions(copy, metadata: here, filedUnder: path, attempt: there == nil ? 1 : 2)
        }
        if let there, there.kind == .file { try moveToVersions(copy, filedUnder: path) }
        if here != nil { try local.removeFile(copy) }
        setRecord(copy, nil)
    }
}

extension RootMarkers {
    /// What `path` is when it is one of Nimbus's own names in the local folder or lies inside
    /// one, in words that finish "PATH is …": the root marker, `.nimbus` at the top (the
    /// name of Nimbus's own folder in the cloud folder, never synced either way), a copy's
    /// temporary file, the holding folder of kept deletions (`.nimbus-tmp-deleted/…`), any
    /// other `.nimbus-tmp-` name. Nil for the user's names.
    static func ownName(_ path: RelativePath) -> String? {
        if path == local { return "the marker Nimbus keeps to recognise the local folder it syncs" }
        if cloudDirectory.contains(path) {
            let what = "the name of the folder where Nimbus keeps its own data in the cloud folder"
            return path == cloudDirectory ? what : "inside \(cloudDirectory), \(what)"
        }
        guard let index = path.components.firstIndex(where: TemporaryName.isTemporary) else { return nil }
        let top = path.components[...index].reduce(RelativePath.root) { try! $0.appending(name: $1) }
        if let holding = deletedHolding(containing: path) {
            return path == holding ? "the folder where Nimbus keeps local files a sync deleted, until the mass-delete guard's window has passed"
                : "in \(holding), where Nimbus keeps local files a sync deleted until the mass-delete guard's window has passed"
        }
        let what = TemporaryName.isCopyTemporary(top.name) ? "a temporary file of a copy Nimbus is making" : "a name Nimbus keeps for its temporary files (.nimbus-tmp-…)"
        return path == top ? what : "inside \(top), \(what)"
    }
}
