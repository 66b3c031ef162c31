import NimbusCore
import NimbusSystem

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
                                                  mtimePrecision: 1_000_000_000, isNetwork: true)
        }
        let chosen = WriteProtocol.choose(for: capabilities)
        cloud.adopt(chosen)
        state.withLock { s in
            s.status.cloudCapabilities = capabilities
            s.status.cloudWriteProtocol = chosen
        }
        log.notice("cloud folder filesystem: \(capabilities); written with \(chosen)")
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
}
