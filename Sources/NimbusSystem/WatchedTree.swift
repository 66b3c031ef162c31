import NimbusVocabulary

/// The directories a `TreeWatcher` watches, by watch descriptor, and the translation of the
/// kernel's events into `WatchEvent`s relative to the root. Plain state for one thread at a
/// time: `TreeWatcher` keeps it behind a mutex.
///
/// The kernel reports an event against the watch of the directory that holds the entry, so
/// the table `directories` (watch → where that directory is now) is what turns events into
/// paths. It changes with the events themselves: a new directory gets a watch, a renamed one
/// keeps its watch under the new path, a deleted one loses it (`IN_IGNORED`).
struct WatchedTree {
    let root: SystemPath
    let options: TreeWatcher.Options
    let inotify: Inotify
    /// Device and inode of the root, so that a walk never enters another directory that took
    /// its path. The root is opened only for a walk: an open descriptor would hold back the
    /// kernel's `IN_DELETE_SELF` when the root is deleted.
    let rootIdentity: (device: UInt64, inode: UInt64)
    let mask: Inotify.Mask
    let rootWatch: Inotify.Watch
    var directories: [Inotify.Watch: RelativePath] = [:]
    /// Directories renamed away in the batch being translated, by cookie, until their new name
    /// shows up (a rename inside the tree) or the batch ends (a move out of it).
    private var departures: [UInt32: Departure] = [:]
    /// Directories left without a watch for lack of watches, not yet reported.
    var unwatched: [RelativePath] = []
    private var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)

    private struct Departure {
        var path: RelativePath
        var watches: [Inotify.Watch]
    }

    /// Watches `root` and every directory below it. Throws `WatchLimitReached` when not even
    /// the root can be watched; directories below it that cannot be watched are reported by
    /// `takeLimitReached()`.
    init(root: SystemPath, options: TreeWatcher.Options) throws {
        let inotify = try Inotify()
        do {
            let opened = try FileDescriptor.open(root, .directory)
            defer { try? opened.close() }
            let metadata = try opened.metadata()
            let mask: Inotify.Mask = [.created, .modified, .closedWrite, .attributesChanged, .deleted, .movedFrom,
                                      .movedTo, .deletedSelf, .movedSelf, .onlyDirectory, .excludeUnlinked]
            self.mask = options.reportsOpens ? mask.union(.opened) : mask
            self.rootWatch = try Self.addWatch(inotify, for: opened, mask: self.mask)
            self.root = root
            self.options = options
            self.inotify = inotify
            self.rootIdentity = (metadata.device, metadata.inode)
            var ignored: [WatchEvent] = []
            try watchSubtree(.root, reporting: .nothing, into: &ignored)
        } catch {
            try? inotify.close()
            if let errno = error as? Errno {
                if errno == .noSpace {
                    throw WatchLimitReached(directories: [.root], limit: WatchLimitReached.currentLimit())
                }
                throw errno.at("watch", root)
            }
            throw error
        }
    }

    func close() {
        try? inotify.close()
    }

    /// Reads what the kernel has queued and translates it. Empty when nothing was queued or
    /// everything read was filtered out.
    mutating func readEvents() throws -> [WatchEvent] {
        do {
            var raw = try inotify.readEvents(into: &readBuffer)
            // The two halves of a rename are queued together; when a full buffer separated them,
            // fetch the rest so that they are paired within one batch.
            while raw.last?.mask.contains(.movedFrom) == true {
                let more = try inotify.readEvents(into: &readBuffer)
                if more.isEmpty { break }
                raw += more
            }
            return try translate(raw)
        } catch let errno as Errno {
            throw errno.at("watch", root)
        }
    }

    /// The pending `watchLimitReached` event, if some directories could not be watched.
    mutating func takeLimitReached() -> WatchEvent? {
        guard !unwatched.isEmpty else { return nil }
        defer { unwatched = [] }
        let limit = WatchLimitReached(directories: unwatched.sorted(), limit: WatchLimitReached.currentLimit())
        return WatchEvent(.watchLimitReached(limit), .root, isDirectory: true)
    }

    private mutating func translate(_ raw: [Inotify.Event]) throws -> [WatchEvent] {
        var events: [WatchEvent] = []
        for event in raw {
            try translate(event, into: &events)
        }
        for departure in departures.values {
            forget(departure)
        }
        departures = [:]
        if let limit = takeLimitReached() { events.append(limit) }
        return events
    }

    private mutating func translate(_ event: Inotify.Event, into events: inout [WatchEvent]) throws {
        if event.mask.contains(.queueOverflowed) {
            events.append(WatchEvent(.overflow, .root, isDirectory: true))
            try rewatchEverything()
            return
        }
        guard let directory = directories[event.watch] else { return }  // a watch already dropped
        if event.mask.contains(.ignored) {
            directories[event.watch] = nil
            return
        }
        if event.name.isEmpty {
            // About a watched directory itself. Its parent reports the same change under the
            // directory's name, so only the root, which has no watched parent, speaks here.
            if event.watch == rootWatch, let kind = Self.kindForRoot(event.mask) {
                events.append(WatchEvent(kind, .root, isDirectory: true))
            }
            return
        }
        if TemporaryName.isTemporary(event.name) { return }
        let path = try directory.appending(name: event.name)
        let isDirectory = event.mask.contains(.isDirectory)
        if isDirectory && options.exclude(path) { return }
        guard let kind = Self.kind(event) else { return }
        // Every `ls` opens a directory; only opened files matter (placeholders).
        if kind == .opened && isDirectory { return }
        events.append(WatchEvent(kind, path, isDirectory: isDirectory))
        guard isDirectory else { return }
        switch kind {
        case .created:
            try watchSubtree(path, reporting: .everything, into: &events)
        case .movedFrom(let cookie):
            departures[cookie] = Departure(path: path, watches: watches(within: path))
        case .movedTo(let cookie):
            if let departure = departures.removeValue(forKey: cookie) {
                // Renamed inside the tree: the watches stay, only their paths change. Walking
                // the new place records them there and also catches directories the old
                // paths had missed.
                try watchSubtree(path, reporting: .newlyWatched, into: &events)
                forget(departure)
            } else {
                try watchSubtree(path, reporting: .everything, into: &events)
            }
        default:
            break
        }
    }

    private static func kind(_ event: Inotify.Event) -> WatchEvent.Kind? {
        let mask = event.mask
        if mask.contains(.created) { return .created }
        if mask.contains(.modified) { return .modified }
        if mask.contains(.closedWrite) { return .closedWrite }
        if mask.contains(.attributesChanged) { return .attributesChanged }
        if mask.contains(.deleted) { return .deleted }
        if mask.contains(.movedFrom) { return .movedFrom(cookie: event.cookie) }
        if mask.contains(.movedTo) { return .movedTo(cookie: event.cookie) }
        if mask.contains(.opened) { return .opened }
        return nil
    }

    private static func kindForRoot(_ mask: Inotify.Mask) -> WatchEvent.Kind? {
        if !mask.isDisjoint(with: [.deletedSelf, .movedSelf, .unmounted]) { return .rootRemoved }
        if mask.contains(.attributesChanged) { return .attributesChanged }
        return nil
    }

    private func watches(within path: RelativePath) -> [Inotify.Watch] {
        directories.compactMap { path.contains($0.value) ? $0.key : nil }
    }

    /// Drops the watches of a directory that left: those still recorded below its old path
    /// (a walk of a new place may have claimed some of them since).
    private mutating func forget(_ departure: Departure) {
        for watch in departure.watches {
            guard let path = directories[watch], departure.path.contains(path) else { continue }
            try? inotify.removeWatch(watch)
            directories[watch] = nil
        }
    }

    /// After an overflow nothing recorded can be trusted: walk the whole tree again, keep the
    /// watches found and drop the others.
    private mutating func rewatchEverything() throws {
        var ignored: [WatchEvent] = []
        let found = Set(try watchSubtree(.root, reporting: .nothing, into: &ignored))
        for watch in directories.keys where !found.contains(watch) {
            try? inotify.removeWatch(watch)
            directories[watch] = nil
        }
    }
}
