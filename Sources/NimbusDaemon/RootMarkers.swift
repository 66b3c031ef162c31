import FoundationEssentials
import NimbusCore
import NimbusSystem

/// The identity markers of DESIGN §3. A root whose marker is missing is never read as
/// "everything was deleted": an unmounted disk or an empty mount point looks exactly like that.
enum RootMarkers {
    static let local = try! RelativePath(validating: ".nimbus-root")
    static let ignoreFile = try! RelativePath(validating: ".nimbusignore")
    static let cloudDirectory = try! RelativePath(validating: ".nimbus")
    static let cloud = try! RelativePath(validating: ".nimbus/root")
    static let versions = try! RelativePath(validating: ".nimbus/versions")
    static let temporary = try! RelativePath(validating: ".nimbus/tmp")

    enum Check: Equatable {
        case ready
        case missing(String)
    }

    /// Checks both markers; on first pairing (`firstPairing`) creates the missing ones.
    static func check<FS: FileSystem>(local localFS: FS, cloud cloudFS: FS, firstPairing: Bool,
                                      localRoot: String, cloudRoot: String) -> Check {
        do {
            var cloudID = try read(cloudFS, cloud, key: "id")
            if cloudID == nil {
                guard firstPairing else {
                    return .missing("The cloud folder \(cloudRoot) has no Nimbus marker (.nimbus/root): it may be unmounted or was replaced. Nothing is synced until it is back; mount it again, or remove the pair's journal to pair afresh.")
                }
                let id = UUID().uuidString.lowercased()
                if try cloudFS.metadata(of: cloudDirectory) == nil { try cloudFS.makeDirectory(cloudDirectory, mode: 0o755) }
                try cloudFS.writeFile(cloud, contents: Array("nimbus-cloud 1\nid=\(id)\n".utf8), mode: 0o644)
                cloudID = id
            }
            let pairedWith = try read(localFS, local, key: "cloud")
            if pairedWith == nil {
                guard firstPairing else {
                    return .missing("The local folder \(localRoot) has no Nimbus marker (.nimbus-root): it may be on a disk that is not mounted, or was deleted. Nothing is synced until it is back.")
                }
                try localFS.writeFile(local, contents: Array("nimbus-root 1\ncloud=\(cloudID!)\n".utf8), mode: 0o644)
            } else if pairedWith != cloudID {
                return .missing("The local folder \(localRoot) is paired with another cloud folder (id \(pairedWith!)), not \(cloudRoot) (id \(cloudID!)). Nothing is synced; use the right cloud folder, or delete \(localRoot)/.nimbus-root to pair it with this one.")
            }
            return .ready
        } catch {
            return .missing("Cannot read the Nimbus markers: \(error). Nothing is synced until this is fixed.")
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
