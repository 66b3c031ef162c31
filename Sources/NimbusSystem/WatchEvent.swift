import NimbusVocabulary

/// A change below a watched root, as `TreeWatcher` saw it. Events are hints that say where to
/// look; the scan is the truth (DESIGN §1). `path` is relative to the root and keeps the raw
/// bytes of every name.
public struct WatchEvent: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable {
        /// A new entry. Also synthesized for every entry found in a directory that was created
        /// or moved in, since those may appear before the directory's own watch exists.
        case created
        /// A write to a file's content (`IN_MODIFY`).
        case modified
        /// A file opened for writing was closed: the usual moment to look at it (`IN_CLOSE_WRITE`).
        case closedWrite
        /// Permissions, owner, timestamps, link count or extended attributes (`IN_ATTRIB`).
        case attributesChanged
        case deleted
        /// The entry was renamed away from `path`. The `movedTo` with the same cookie, when there
        /// is one, names its destination; without one it left the tree: treat it as deleted.
        case movedFrom(cookie: UInt32)
        /// The entry was renamed to `path`. Without a `movedFrom` partner it came from outside
        /// the tree: treat it as created (a directory's contents follow as `created`).
        case movedTo(cookie: UInt32)
        /// A rename inside the tree from `from` to `path`, made by `pairingMoves()`.
        case moved(from: RelativePath)
        /// A file was opened (`IN_OPEN`), reported only with `TreeWatcher.Options.reportsOpens`.
        case opened
        /// The kernel's queue overflowed and events were lost: rescan the whole root.
        case overflow
        /// The root itself was deleted, moved or unmounted: stop watching it.
        case rootRemoved
        /// The inotify watch limit was hit; the listed directories (and everything below them)
        /// are not watched and need periodic scans.
        case watchLimitReached(WatchLimitReached)
    }

    public var kind: Kind
    public var path: RelativePath
    public var isDirectory: Bool

    public init(_ kind: Kind, _ path: RelativePath, isDirectory: Bool) {
        self.kind = kind
        self.path = path
        self.isDirectory = isDirectory
    }

    public var description: String {
        let what = isDirectory ? "directory" : "file"
        return switch kind {
        case .moved(let from): "moved \(what) \(from.forDisplay) -> \(path.forDisplay)"
        case .movedFrom(let cookie): "movedFrom(\(cookie)) \(what) \(path.forDisplay)"
        case .movedTo(let cookie): "movedTo(\(cookie)) \(what) \(path.forDisplay)"
        case .watchLimitReached(let limit): "\(limit)"
        default: "\(kind) \(what) \(path.forDisplay)"
        }
    }
}

extension Array where Element == WatchEvent {
    /// Joins each `movedFrom` with the later `movedTo` of the same cookie into one
    /// `moved(from:)`. The joined event takes the place of the `movedFrom`, so that an entry
    /// created under the old name after the rename still comes after it. Halves without a
    /// partner in this batch stay as they are: a move out of the tree or into it.
    public func pairingMoves() -> [WatchEvent] {
        var destinations: [UInt32: Int] = [:]
        for (index, event) in enumerated() {
            if case .movedTo(let cookie) = event.kind, destinations[cookie] == nil { destinations[cookie] = index }
        }
        var paired = Set<Int>()
        var result: [WatchEvent] = []
        for (index, event) in enumerated() where !paired.contains(index) {
            if case .movedFrom(let cookie) = event.kind, let destination = destinations[cookie], destination > index {
                let arrival = self[destination]
                result.append(WatchEvent(.moved(from: event.path), arrival.path, isDirectory: arrival.isDirectory))
                paired.insert(destination)
                destinations[cookie] = nil
            } else {
                result.append(event)
            }
        }
        return result
    }
}

/// inotify ran out of watches: `fs.inotify.max_user_watches` caps them per user, across every
/// program of that user. The watcher keeps working for the directories it did watch; the
/// ones listed here must be scanned periodically until the limit is raised. Not a
/// `SystemError`: one ENOSPC from inotify_add_watch becomes a list of directories and a sysctl
/// to raise, which is what the user needs.
public struct WatchLimitReached: Error, Hashable, Sendable, CustomStringConvertible {
    /// Directories that have no watch; nothing below them is watched either.
    public var directories: [RelativePath]
    /// The value of the sysctl when the limit was hit, when it could be read.
    public var limit: Int?

    public static let sysctl = "fs.inotify.max_user_watches"
    public static let suggestedLimit = 524_288

    public init(directories: [RelativePath], limit: Int?) {
        self.directories = directories
        self.limit = limit
    }

    public var description: String {
        let shown = directories.prefix(10).map(\.forDisplay).joined(separator: ", ")
        let more = directories.count > 10 ? " and \(directories.count - 10) more" : ""
        let current = limit.map { " = \($0)" } ?? ""
        return "inotify watch limit reached (\(Self.sysctl)\(current)): \(directories.count) "
            + "director\(directories.count == 1 ? "y is" : "ies are") not watched and will only be "
            + "rescanned periodically: \(shown)\(more). Raise the limit with "
            + "`sysctl \(Self.sysctl)=\(Self.suggestedLimit)` (and add `\(Self.sysctl) = \(Self.suggestedLimit)` "
            + "to /etc/sysctl.d/90-nimbus.conf to keep it after a reboot), then restart the daemon."
    }

    /// Reads the current limit from /proc; nil when /proc is not available.
    static func currentLimit() -> Int? {
        guard let file = try? FileDescriptor.open("/proc/sys/fs/inotify/max_user_watches") else { return nil }
        let text = file.closeAfter { try? file.readAll() } ?? []
        return Int(String(decoding: text.filter { $0 != UInt8(ascii: "\n") }, as: UTF8.self))
    }
}

extension RelativePath {
    /// The root's description is empty; messages say ".".
    fileprivate var forDisplay: String { isRoot ? "." : description }
}
