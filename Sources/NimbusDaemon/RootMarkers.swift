import FoundationEssentials
import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// The identity markers of DESIGN §3. A root whose marker is missing is never read as
/// "everything was deleted": an unmounted disk or an empty mount point looks exactly like that.
enum RootMarkers {
    static let local = try! RelativePath(validating: ".nimbus-root")
    static let ignoreFile = try! RelativePath(validating: ".nimbusignore")
    static let cloudDirectory = try! RelativePath(validating: ".nimbus")
    static let cloud = try! RelativePath(validating: ".nimbus/root")
    static let versions = try! RelativePath(validating: ".nimbus/versions")
    /// Every device's temporaries: each in its folder `temporary(for:)`.
    static let temporary = try! RelativePath(validating: ".nimbus/tmp")

    /// `.nimbus/tmp/<device>`: where one device's in-flight copies and scratch files go, so
    /// that no other device's sweep takes them. A device name is one path component already
    /// (no "/", no control characters); "." and ".." are spelled out. The config counts a
    /// device name's characters, not its bytes: one of more than 255 bytes (64 emoji) keeps its
    /// start and gets a hash of the whole, so that two devices whose names begin alike still
    /// have folders of their own (a device sweeps what is in its folder).
    static func temporary(for device: String) -> RelativePath {
        var name = Array((device == "." || device == ".." ? String(repeating: "_", count: device.count) + "dot" : device).utf8)
        if name.count > FileName.maxBytes {
            let hash = String(XXHash64.hash(name), radix: 16)
            name = FileName.prefix(name, fitting: FileName.maxBytes - 17) + Array(("-" + String(repeating: "0", count: 16 - hash.count) + hash).utf8)
        }
        return (try? temporary.appending(name: name)) ?? temporary
    }

    enum Check: Equatable {
        case ready
        case missing(String)
    }

    /// Checks both markers; on first pairing (`firstPairing`) creates the missing ones.
    /// `now` is the new markers' mtime; `beforeCreatingCloudMarker` runs first (the cloud's
    /// filesystem is probed, so the marker is created the way it allows); `wroteLocalMarker`
    /// runs once a local marker was written, which is not durable yet.
    ///
    /// What a crash may leave, and why only the cloud marker is flushed here. A missing marker
    /// halts the pair once the journal holds a record (`firstPairing` false), so by then both
    /// must be durable; before, a missing one is made again. The cloud marker is flushed (its
    /// content before its name, its folder after) before the local one is written: other
    /// devices may read it at once, and a local marker naming a cloud marker that a crash then
    /// lost would halt the pair for good (a paired folder never makes a new cloud marker, see
    /// below). The local marker is read by this daemon alone, so it is written without a flush
    /// (issue 15: two of the four fsyncs before a first sync's first copy), and the engine makes
    /// it durable before the journal's first commit (`SyncEngine.commit`): the first pass's
    /// flush of the local filesystem (syncfs, which the cloud folder's flush is when both are on
    /// one filesystem) or, failing that, a flush of its own. A crash before then leaves an
    /// empty journal and no local marker, an empty one (neither names a cloud folder, so it is
    /// written again) or the whole one (one write of a few dozen bytes, which a crash does not
    /// cut in the middle).
    ///
    /// Why the cloud marker does not wait for the first pass's flush of the cloud filesystem,
    /// as the local one does (issue 15 asked; its two fsyncs cost about 1.5 ms of a first sync).
    /// That flush does not always come (a first pass with nothing to upload has none), and until
    /// it comes the marker can be lost while what names it is not: on this device, the local
    /// marker is on another filesystem as a rule, where the kernel may write it back first, and
    /// a local marker naming a lost cloud marker halts the pair for good (see above); on another
    /// device, a network cloud serves the new marker at once, before its server has it on disk
    /// (NFS keeps an unflushed write "unstable" until a COMMIT, which is what fsync sends), so a
    /// second device may pair with an id that the server's crash then takes away, and that
    /// device halts for good too. Flushed here, the marker is durable before anyone can see it.
    static func check<FS: FileSystem>(local localFS: FS, cloud cloudFS: FS, firstPairing: Bool,
                                      localRoot: String, cloudRoot: String, now: WallInstant,
                                      beforeCreatingCloudMarker: () -> Void = {},
                                      wroteLocalMarker: () -> Void = {}) -> Check {
        do {
            let pairedWith = try read(localFS, local, key: "cloud")
            var cloudID = try read(cloudFS, cloud, key: "id")
            if cloudID == nil {
                // A local folder that is paired already never makes a new cloud marker, even
                // with an empty journal: a network client that briefly does not see the marker
                // (a stale directory cache) would replace the shared one, and every other
                // device would then refuse the cloud folder as another one.
                if let pairedWith {
                    return .missing("The local folder \(localRoot) is paired with another cloud folder (id \(pairedWith)), and \(cloudRoot) has no Nimbus marker (.nimbus/root): it may be unmounted, or not that folder. Nothing is synced; mount the right cloud folder, or delete \(localRoot)/.nimbus-root to pair it with this one.")
                }
                guard firstPairing else {
                    return .missing("The cloud folder \(cloudRoot) has no Nimbus marker (.nimbus/root): it may be unmounted or was replaced. Nothing is synced until it is back; mount it again, or remove the pair's journal to pair afresh.")
                }
                let id = UUID().uuidString.lowercased()
                if try cloudFS.metadata(of: cloudDirectory) == nil { try cloudFS.makeDirectory(cloudDirectory, mode: 0o755) }
                beforeCreatingCloudMarker()
                cloudID = try createCloudMarker(cloudFS, id: id, now: now)
                guard cloudID != nil else {
                    return .missing("Another device is pairing with the cloud folder \(cloudRoot) at the same moment and its marker (.nimbus/root) cannot be read yet; this is checked again at the next pass.")
                }
            }
            if pairedWith == nil {
                guard firstPairing else {
                    return .missing("The local folder \(localRoot) has no Nimbus marker (.nimbus-root): it may be on a disk that is not mounted, or was deleted. Nothing is synced until it is back.")
                }
                try createLocalMarker(localFS, cloudID: cloudID!, now: now)
                wroteLocalMarker()
            } else if pairedWith != cloudID {
                return .missing("The local folder \(localRoot) is paired with another cloud folder (id \(pairedWith!)), not \(cloudRoot) (id \(cloudID!)). Nothing is synced; use the right cloud folder, or delete \(localRoot)/.nimbus-root to pair it with this one.")
            }
            return .ready
        } catch {
            return .missing("Cannot read the Nimbus markers: \(error). Nothing is synced until this is fixed.")
        }
    }

    /// Creates the cloud marker with `id` exclusively (the cloud's write protocol: another
    /// device pairing at the same moment may have made its own); returns the id in force.
    private static func createCloudMarker<FS: FileSystem>(_ cloudFS: FS, id: String, now: WallInstant) throws -> String? {
        let prepared = try cloudFS.prepareFile(near: cloud, contents: Array("nimbus-cloud 1\nid=\(id)\n".utf8), mode: 0o644,
                                               mtime: now.nanoseconds, attributes: [], durable: true)
        do {
            _ = try cloudFS.install(prepared, at: cloud, replacing: nil, displacedTo: nil, durable: true)
            return id
        } catch CopyError.destinationChanged {
            cloudFS.discard(prepared)  // Gone already where the installer removed it.
            return try read(cloudFS, cloud, key: "id")  // Another device was first: its marker counts.
        }
    }

    /// Writes the local marker naming `cloudID`, replacing what a crash may have left there
    /// (an empty marker, which names no cloud folder), without a flush (see `check`).
    private static func createLocalMarker<FS: FileSystem>(_ localFS: FS, cloudID: String, now: WallInstant) throws {
        let leftover = try localFS.metadata(of: local)
        let prepared = try localFS.prepareFile(near: local, contents: Array("nimbus-root 1\ncloud=\(cloudID)\n".utf8), mode: 0o644,
                                               mtime: now.nanoseconds, attributes: [], durable: false)
        do {
            _ = try localFS.install(prepared, at: local, replacing: leftover, displacedTo: nil, durable: false)
        } catch {
            localFS.discard(prepared)
            throw error
        }
    }

    static func read<FS: FileSystem>(_ fs: FS, _ path: RelativePath, key: String) throws -> String? {
        guard let meta = try fs.metadata(of: path), meta.kind == .file else { return nil }
        let text = String(decoding: try fs.readFile(path, limit: 4096), as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix(key + "=") {
            return String(line.dropFirst(key.count + 1))
        }
        return nil
    }
}
