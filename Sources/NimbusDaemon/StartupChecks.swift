import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// Why the daemon cannot start, said once before READY with its sysexits code, instead of
/// waiting forever for a folder that can never work (issue #13).
public struct StartupProblem: Error, CustomStringConvertible, Equatable {
    public var description: String
    public var exitCode: Int32

    static let noInput: Int32 = 66      // EX_NOINPUT
    static let cannotCreate: Int32 = 73 // EX_CANTCREAT
    static let temporary: Int32 = 75    // EX_TEMPFAIL
    static let config: Int32 = 78       // EX_CONFIG
}

enum StartupChecks {
    /// The folders as given, before anything is created. A folder that is a file is a mistake
    /// in the configuration. A cloud folder that does not exist is waited for only when the
    /// pair synced before (an unmounted share comes back); never paired, it is a typo or a
    /// share not mounted yet, and the daemon says so and exits. The local folder is created
    /// (with its parents) on the first pairing; a missing one of a pair synced before is
    /// waited for, since creating it would sync into the wrong disk.
    static func checkRoots(local: String, cloud: String, firstPairing: Bool, createsMissing: Bool,
                           kind: (String) throws -> FileKind?) throws(StartupProblem) {
        for (side, path) in [("local", local), ("cloud", cloud)] {
            let found: FileKind?
            do { found = try kind(path) } catch {
                // Unreadable now (permissions, I/O): the engine reports it and waits.
                continue
            }
            if let found, found != .directory {
                throw StartupProblem(description: "the \(side) folder \(path) is a \(found == .file ? "file" : "\(found)"), not a folder: "
                                         + "give --\(side) (or \(side) in [pair]) a folder",
                                     exitCode: StartupProblem.config)
            }
            if found == nil, side == "cloud", firstPairing, !createsMissing {
                throw StartupProblem(description: "the cloud folder \(cloud) does not exist, and this pair never synced: "
                                         + "check the path, or mount the disk or share first. Nimbus never creates a configured "
                                         + "cloud folder: an empty mount point would pass for an empty cloud",
                                     exitCode: StartupProblem.noInput)
            }
        }
    }

    /// Folders nested as the kernel sees them. The configuration refuses nested paths as
    /// written (`Configuration.check`); a symlink or a bind mount can hide the same nesting,
    /// and a local folder inside its cloud folder uploads itself into itself, one level deeper
    /// at each pass. Checked before anything is created, with where missing folders would be.
    static func checkSeparate(local: String, cloud: String, stateDirectory: String,
                              ancestry: (String) -> FolderAncestry) throws(StartupProblem) {
        func fail(_ message: String) -> StartupProblem {
            StartupProblem(description: message + " (through a symlink or a mount); choose separate folders",
                           exitCode: StartupProblem.config)
        }
        let localPlace = ancestry(local), cloudPlace = ancestry(cloud)
        if localPlace.folder != nil, localPlace.folder == cloudPlace.folder {
            throw fail("the local folder \(local) and the cloud folder \(cloud) are the same folder")
        }
        if cloudPlace.isSameOrInside(localPlace) {
            throw fail("the cloud folder \(cloud) is inside the local folder \(local)")
        }
        if localPlace.isSameOrInside(cloudPlace) {
            throw fail("the local folder \(local) is inside the cloud folder \(cloud)")
        }
        let statePlace = ancestry(stateDirectory)
        for (name, root, place) in [("local", local, localPlace), ("cloud", cloud, cloudPlace)] where statePlace.isSameOrInside(place) {
            throw fail("the state directory \(stateDirectory) is inside the \(name) folder \(root)")
        }
    }

    /// "already served by nimbusd (pid 1234, socket /run/user/1000/nimbus/default.sock)".
    static func alreadyServed(local: String, holder: Int32?, socket: String?) -> StartupProblem {
        var who = "another nimbusd"
        if let holder { who += " (pid \(holder)" + (socket.map { ", socket \($0)" } ?? "") + ")" }
        return StartupProblem(description: "the local folder \(local) is already synced by \(who): two daemons on one folder "
                                  + "would fight over every change. Stop that one first, or give this one another --local",
                              exitCode: StartupProblem.temporary)
    }
}
