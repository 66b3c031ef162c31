import FoundationEssentials
import NimbusCore
import NimbusProtocol
import NimbusSystem
import NimbusVocabulary

// Paths and errors: a request's path checked, and errors as the protocol says them.
extension ControlHandler {
    /// The path of a request, checked: lexically (WirePath), against Nimbus's own names
    /// (`nimbus_own`, whether or not it exists: every method that takes a path answers so,
    /// here and only here), and on disk, where no folder on the way may be a symlink (the
    /// last component may be one: it is synced as one).
    func resolvePath(_ text: String?, _ base64: String?, field: String, default fallback: RelativePath? = nil) throws -> RelativePath {
        if text == nil && base64 == nil, let fallback { return fallback }
        let wire: WirePath
        do {
            wire = try WirePath(text: text, base64: base64)
        } catch .missing {
            throw RPCError(.invalidParams, "the \(field) is missing", reason: "\(field): missing",
                           suggestion: "give \(field) relative to the local folder, such as \"Documents/report.pdf\"")
        } catch {
            throw Self.invalidPath(text ?? base64 ?? "", reason: error.description)
        }
        let path: RelativePath
        do {
            path = try wire.relativePath()
        } catch {
            throw Self.invalidPath(wire.text, reason: error.description)
        }
        if let what = RootMarkers.ownName(path) { throw Self.nimbusOwn(path, what) }
        var prefix = RelativePath.root
        for name in path.components.dropLast() {
            prefix = try prefix.appending(name: name)
            guard let metadata = try? view.localMetadata(of: prefix) else { break }
            if metadata.kind == .symlink {
                throw Self.invalidPath(wire.text, reason: "\(prefix) is a symlink inside the local folder, and Nimbus never follows symlinks")
            }
            if metadata.kind != .directory { break }
        }
        return path
    }

    static func invalidPath(_ text: String, reason: String) -> RPCError {
        RPCError(.invalidPath, "invalid path \"\(text)\"", reason: reason,
                 suggestion: "give a path relative to the local folder, without '..', such as \"Documents/report.pdf\"")
    }

    static func notFound(_ path: RelativePath) -> RPCError {
        RPCError(.notFound, "no such file or folder", reason: "\(path.isRoot ? "the local folder" : path.description) is not in the local folder",
                 suggestion: "check the path with 'nimbusctl ls'")
    }

    /// `path` is one of Nimbus's own names (`RootMarkers.ownName` says what it is): plainly
    /// not a file of the user's, rather than "not in the local folder", which it may well be.
    static func nimbusOwn(_ path: RelativePath, _ what: String) -> RPCError {
        RPCError(.nimbusOwn, "Nimbus's own name, never synced", reason: "\(path) is \(what); it is never synced",
                 suggestion: "nothing to do: Nimbus creates and removes it by itself")
    }

    /// A request given up because the daemon is stopping (SIGTERM mid-download): said in
    /// words, never as Swift's "CancellationError()".
    static let stopping = RPCError(.daemonStopping, "the daemon is stopping",
                                   reason: "nimbusd was asked to stop while this was under way, so it was given up; nothing was changed",
                                   suggestion: "ask again once the daemon runs again (systemctl --user start nimbusd, or nimbusd)")

    /// An engine or system error as the protocol says it.
    static func failure(_ error: any Error, path: RelativePath? = nil) -> RPCError {
        if let error = error as? RPCError { return error }
        if error is CancellationError { return stopping }
        if let error = error as? EngineRequestError {
            switch error.kind {
            case .notFound:
                return RPCError(.notFound, "not found", reason: error.message, suggestion: "check the path with 'nimbusctl ls' or 'nimbusctl versions'")
            case .notInConflict:
                return RPCError(.notInConflict, "not in conflict", reason: error.message, suggestion: "list the conflicts with 'nimbusctl conflicts'")
            case .invalidArgument:
                return RPCError(.invalidParams, "invalid parameters", reason: error.message, suggestion: "see 'nimbusctl help'")
            case .failed:
                return RPCError(.failed, "the operation failed", reason: error.message, suggestion: "see the daemon's log for details and try again")
            case .busy:
                return RPCError(.busy, "the path is busy", reason: error.message, suggestion: "see 'nimbusctl locks' and try again later")
            case .notInSync:
                return RPCError(.notInSync, "not in sync", reason: error.message, suggestion: "wait until 'nimbusctl info' says it is in sync")
            case .pinned:
                return RPCError(.pinned, "the file is pinned", reason: error.message, suggestion: "run 'nimbusctl unpin' first")
            case .inUse:
                return RPCError(.inUse, "the file is open in a program", reason: error.message,
                                suggestion: "close it (see 'fuser -v' or 'lsof' for which program) and try again")
            case .paused:
                return RPCError(.paused, "sync is paused", reason: error.message, suggestion: "run 'nimbusctl resume' first")
            case .noSpace:
                return RPCError(.noSpace, "not enough free space", reason: error.message,
                                suggestion: "free some space or evict files with 'nimbusctl evict'")
            }
        }
        if let error = error as? SystemError, error.errno == .noSuchFile, let path {
            return notFound(path)
        }
        if let error = error as? Errno, error == .noSuchFile, let path {
            return notFound(path)
        }
        return RPCError(.failed, "the operation failed", reason: "\(error)", suggestion: "see the daemon's log for details and try again")
    }
}
