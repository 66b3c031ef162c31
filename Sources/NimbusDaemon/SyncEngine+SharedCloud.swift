import NimbusCore
import NimbusSystem
import NimbusVocabulary

// A cloud folder shared by several machines (DESIGN §3): what its filesystem supports, how
// it is written, and what happens when a file turns out to have been replaced by another
// device behind a client's cache.

extension SyncEngine {
    /// Probes the cloud folder's filesystem (once per pairing, and again when a missing root
    /// is back: it may be another mount now), chooses how to write it and logs both.
    func probeCloudIfNeeded(force: Bool) {
        guard force || state.withLock({ $0.status.cloudCapabilities == nil }) else { return }
        let capabilities: FilesystemCapabilities
        do {
            capabilities = try cloud.probeCapabilities(in: cloudTemporaryDirectory)
        } catch {
            // Nothing is known: the safest way works everywhere (it only costs a hash per file).
            log.warning("cannot probe what the cloud folder's filesystem supports (\(error)); it is written as a network filesystem")
            capabilities = FilesystemCapabilities(type: "unknown", renameNoReplace: false, renameExchange: false,
                                                  hardLinks: false, extendedAttributes: false,
                                                  mtimePrecision: .seconds(1), isNetwork: true)
        }
        let chosen = WriteProtocol.choose(for: capabilities)
        cloud.adopt(chosen)
        state.withLock { s in
            s.status.cloudCapabilities = capabilities
            s.status.cloudWriteProtocol = chosen
        }
        log.notice("cloud folder filesystem: \(capabilities); written with \(chosen)")
    }

    /// Checks the cloud as written with `writeProtocol` from now on, without probing it (tests
    /// of a shared cloud over an in-memory filesystem).
    func assumeCloudWriteProtocol(_ writeProtocol: WriteProtocol) {
        state.withLock { $0.status.cloudWriteProtocol = writeProtocol }
    }

    /// Whether the base must hold every cloud file's content hash, and replaced files be checked against it.
    var verifiesCloudContent: Bool { state.withLock { $0.status.cloudWriteProtocol.verifiesContent } }

    /// The content hash the cloud file at `path` must have before it is replaced or deleted:
    /// the base's, when the cloud's write protocol verifies content and the hash is known.
    func expectedCloudHash(_ path: RelativePath) -> ContentHash? {
        state.withLock { s in
            guard s.status.cloudWriteProtocol.verifiesContent, let base = s.index[path]?.base, base.kind == .file else { return nil }
            return base.hash
        }
    }

    /// Another device replaced `path` in the cloud while a client cache kept showing the synced
    /// version. The base's cloud side is marked changed, so the next look sees a change there
    /// whatever the cache says: with a local change too, a conflict (both versions kept), else
    /// a download. A version that could not be put back at its name (a third device took it)
    /// becomes a conflict copy in the cloud folder, never only a file in the versions store.
    func anotherDeviceReplaced(_ path: RelativePath, keptAt: RelativePath?) {
        updateRecord(path) { record in
            record.base.cloud.mtime = BaseEntry.replacedElsewhereMtime
            record.base.hash = nil
            record.base.isAmbiguous = false
        }
        guard let keptAt else {
            log.notice("\(path) was replaced in the cloud folder by another device (this device's view of it was cached); it is compared again and kept as a conflict if both changed")
            return
        }
        let copy = ConflictNamer(device: "another device", wallTime: clock.wallNow, utcOffsetSeconds: settings.utcOffsetSeconds)
            .name(for: path) { (try? cloud.metadata(of: $0)) != nil }
        do {
            try cloud.rename(keptAt, to: copy, replacing: false)
            log.notice("conflict on \(path): another device replaced it in the cloud folder, and its name was taken again before that version could be put back; that version is kept as \(copy)")
        } catch {
            log.error("conflict on \(path): another device's version is kept at \(keptAt) in the cloud folder (moving it to \(copy) failed: \(error))")
        }
    }

    /// How long an upload is remembered for `ensureOwnUploadWasKept`: another device's create
    /// that raced it lands within moments, and this device sees it at its next poll.
    static var uploadMemory: Duration { .minutes(10) }

    /// Remembers an upload to a content-checked cloud. A download forgets it, unless it brought
    /// the same content back (an rclone mount shows other attributes for a file soon after its
    /// upload): that version is still only at its name, where a blind create can replace it.
    /// `created`: the name was new in the cloud; where that create was not exclusive on the
    /// server, the file is read again a few times (`checkCreatesDue`).
    func noteInstalled(_ path: RelativePath, on side: Side, hash: ContentHash?, created: Bool = false) {
        let now = clock.wallNow
        state.withLock { s in
            guard side == .cloud, let hash, s.status.cloudWriteProtocol.verifiesContent else {
                if let hash, s.recentUploads[path]?.hash == hash { return }
                s.recentUploads[path] = nil
                return
            }
            s.recentUploads[path] = (hash, now)
            if s.recentUploads.count > 1_000 {
                s.recentUploads = s.recentUploads.filter { now - $0.value.at < Self.uploadMemory }
            }
            if created && s.status.cloudWriteProtocol.create == .exclusiveOpen {
                let due = clock.monotonicNow + Self.createCheckDelays[0]
                s.createChecks[path] = (hash, due, 0)
                s.retries[path] = min(s.retries[path] ?? due, due)
            }
        }
    }

    /// When a file this device created in a cloud without exclusive creates is read again,
    /// after its upload: another device's create of the same name lands when its upload ends,
    /// moments later on a LAN, seconds later on a loaded or distant one.
    static var createCheckDelays: [Duration] { [.seconds(2), .seconds(10), .seconds(60)] }

    /// Reads again the files created here whose check is due, in `scope`, before the pass
    /// looks at them. Another device that created the same name at the same moment may have
    /// replaced this device's upload blindly (an rclone mount: WebDAV has no exclusive create,
    /// and rclone checks `O_EXCL` against its own view of the folder). When its version has
    /// the same size and second as ours, which an rclone mount shows with the same inode (it
    /// numbers them by path), nothing in the attributes tells, and this device took the other
    /// version for its own: the two trees differed for good, and this device's version was
    /// only in its local folder, taken for synced (SharedCloudRandomTests on rclone waited for
    /// it forever). Such a path is marked changed on both sides, so the pass keeps both: a
    /// conflict, as when the replacement is seen before a download (`ensureOwnUploadWasKept`).
    func checkCreatesDue(in scope: [RelativePath]) {
        let now = clock.monotonicNow
        let due = state.withLock { s in
            s.createChecks.filter { path, check in check.due <= now && scope.contains { $0.contains(path) } }
        }
        for (path, check) in due.sorted(by: { $0.key < $1.key }) {
            let base = state.withLock { s -> BaseEntry? in
                let next = check.check + 1 < Self.createCheckDelays.count ? now + Self.createCheckDelays[check.check + 1] : nil
                s.createChecks[path] = next.map { (check.hash, $0, check.check + 1) }
                if let next { s.retries[path] = min(s.retries[path] ?? next, next) }
                return s.index[path]?.base
            }
            // No longer our version (changed here or there since): nothing more to check.
            guard let base, base.kind == .file, base.hash == check.hash else {
                state.withLock { _ = $0.createChecks.removeValue(forKey: path) }
                continue
            }
            // Other attributes in the cloud: the pass sees a change there, and a download
            // checks what it replaces (`ensureOwnUploadWasKept`). What cannot be read is
            // looked at again at the next check.
            guard let current = try? cloud.metadata(of: path), current.isUnchanged(from: base.cloud),
                  let hash = try? cloud.contentHash(of: path), hash != check.hash,
                  (try? isKeptInVersions(path, check.hash)) == false else { continue }
            updateRecord(path) { record in
                record.base.local.mtime = BaseEntry.replacedElsewhereMtime
                record.base.cloud.mtime = BaseEntry.replacedElsewhereMtime
                record.base.hash = nil
                record.base.isAmbiguous = false
            }
            state.withLock { s in
                s.createChecks[path] = nil
                s.recentUploads[path] = nil
            }
            log.notice("conflict on \(path): the file this device created was replaced in the cloud folder without being kept (another device created the same name at the same moment, which this filesystem cannot refuse); this device's version is kept as a conflict")
        }
    }

    /// Whether a version of `path` with content `hash` is in the versions store.
    func isKeptInVersions(_ path: RelativePath, _ hash: ContentHash) throws -> Bool {
        try VersionStore(device: settings.deviceName).versions(of: path, in: cloud).contains { version in
            version.metadata.size == hash.size && (try? cloud.contentHash(of: version.location)) == hash
        }
    }

    /// Before a download replaces `path` here: if the version it replaces is one this device
    /// uploaded moments ago, that version must have been kept by whoever replaced it (every
    /// Nimbus moves a cloud file to the versions store before replacing it). Where creating a
    /// name cannot be made exclusive on the server (an rclone mount: WebDAV has no exclusive
    /// create, and rclone checks `O_EXCL` against its own view of the folder), another device
    /// that created the same name at the same moment may have replaced it blindly: then this
    /// device's version, still in the local folder, is kept as a conflict rather than
    /// overwritten (`ChangedSincePlanned`: the path is planned again, both sides now changed).
    func ensureOwnUploadWasKept(_ path: RelativePath) throws {
        let now = clock.wallNow
        let (upload, base) = state.withLock { s in (s.recentUploads[path], s.index[path]?.base) }
        guard let upload, now - upload.at < Self.uploadMemory, let base, base.kind == .file, base.hash == upload.hash else {
            return
        }
        // Still there (only the attributes the client shows changed, as an rclone mount's do
        // after an upload): nothing is lost, but it is still remembered, since a blind create
        // can still replace it.
        if (try? cloud.contentHash(of: path)) == upload.hash { return }
        // Kept by whoever replaced it: nothing is lost, and nothing more can be.
        if try isKeptInVersions(path, upload.hash) {
            state.withLock { _ = $0.recentUploads.removeValue(forKey: path) }
            return
        }
        updateRecord(path) { record in
            record.base.local.mtime = BaseEntry.replacedElsewhereMtime
            record.base.hash = nil
            record.base.isAmbiguous = false
        }
        state.withLock { _ = $0.recentUploads.removeValue(forKey: path) }
        log.notice("conflict on \(path): the version this device uploaded was replaced in the cloud folder without being kept (another device created the same name at the same moment, which this filesystem cannot refuse); this device's version is kept as a conflict")
        throw ChangedSincePlanned(path: path, side: .cloud)
    }
}
