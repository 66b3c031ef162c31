import NimbusProtocol
import NimbusSystem
import NimbusVocabulary

/// Creates and checks the directory of the control socket (DESIGN §7): the socket is the
/// daemon's door, so whoever could replace it could impersonate the daemon to `nimbusctl`.
enum ControlSocketDirectory {
    struct Refused: Error, CustomStringConvertible {
        var description: String
    }

    /// A missing directory is created with mode 0700 (its parents too, 0700). An existing one
    /// must be a real directory (not a symlink) owned by the daemon's user or root, and not
    /// writable by others unless sticky (like /tmp, where others cannot remove our socket).
    /// The `/tmp/nimbus-<uid>` fallback, which anyone could have created first, must in
    /// addition be owned by the daemon's user with mode 0700 exactly.
    static func prepare(forSocket socketPath: String, uid: UInt32) throws {
        let directory = SystemPath(socketPath).parent.description
        guard !directory.isEmpty else { return }
        if try UnixStreamSocket.ownership(of: directory) == nil {
            try makeDirectories(SystemPath(SystemPath(directory).parent.description), permissions: 0o700)
            _ = try UnixStreamSocket.makeDirectory(directory, permissions: 0o700)
        }
        guard let info = try UnixStreamSocket.ownership(of: directory) else {
            throw Refused(description: "the socket directory \(directory) vanished while it was being created")
        }
        guard info.kind == .directory else {
            throw Refused(description: "the socket directory \(directory) is not a directory (a symlink or a file is in the way); remove it or give --socket PATH")
        }
        let isFallback = directory == Locations.socketDirectory(environment: [:], uid: uid)
        if isFallback {
            guard info.uid == uid, info.mode & 0o777 == 0o700 else {
                throw Refused(description: "the socket directory \(directory) belongs to uid \(info.uid) with mode \(octal(info.mode)), not to uid \(uid) with mode 700; someone else may have created it. Remove it, or set XDG_RUNTIME_DIR, or give --socket PATH")
            }
            return
        }
        guard info.uid == uid || info.uid == 0 else {
            throw Refused(description: "the socket directory \(directory) belongs to uid \(info.uid), not to uid \(uid); give --socket PATH in a directory of your own")
        }
        if info.mode & 0o022 != 0 && info.mode & 0o1000 == 0 {
            throw Refused(description: "the socket directory \(directory) is writable by other users (mode \(octal(info.mode))); run chmod go-w on it or give --socket PATH")
        }
    }

    static func octal(_ mode: UInt32) -> String { String(mode, radix: 8) }
}

extension ControlServer {
    /// One line for the log when the socket cannot be opened.
    public static func explainStartFailure(_ error: any Error, socketPath: String) -> String {
        if let refused = error as? ControlSocketDirectory.Refused {
            return "cannot open the control socket: \(refused)"
        }
        switch Errno(of: error) {
        case Errno.addressInUse?:
            return "cannot open the control socket \(socketPath): another nimbusd is already listening there; stop it first, or start this one with another --instance or --socket"
        case Errno.fileExists?:
            return "cannot open the control socket \(socketPath): a file that is not a socket is in the way; move it away or give --socket PATH"
        case Errno.permissionDenied?:
            return "cannot open the control socket \(socketPath): permission denied; give --socket PATH in a directory of your own"
        default:
            return "cannot open the control socket \(socketPath): \(error)"
        }
    }
}
