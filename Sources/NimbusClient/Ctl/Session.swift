import NimbusCore
import NimbusProtocol
import NimbusSystem

/// Runs one command against a connected daemon and prints the outcome. Returns the exit
/// status; throws for failures that end the whole command.
struct Session: Sendable {
    let connection: NimbusConnection
    let style: OutputStyle
    let console: Console
    let resolver: PathResolver
    /// `--socket PATH` or `--instance NAME` as given, for the commands printed for pasting.
    var reach: [String] = []

    var context: RenderContext { .current(color: style.colorOnStandardOutput, reach: reach) }

    func run(_ command: Command) async throws -> Int32 {
        switch command {
        case .status:
            let (status, raw) = try await connection.callBoth(.status, NoParams(), as: StatusResult.self)
            emit(raw) { Render.status(status, context) }
            return status.needsAttention ? Failure.needsAttention : 0
        case let .list(path, recursive, state):
            let folder = try path.map { try resolver.protocolPath($0) } ?? resolver.currentFolder ?? ""
            let (entries, raw) = try await connection.listAll(folder, recursive: recursive, state: state, raw: style.json)
            if style.json {
                console.out(JSONValue.object(["entries": .array(raw)]).jsonText)
            } else if !entries.isEmpty {
                // A file lists as itself: show its name from its folder.
                let base = entries.count == 1 && entries[0].path == folder ? parent(of: folder) : folder
                console.out(Render.entries(entries, base: base, context))
            }
        case .info(let path):
            let relative = try resolver.protocolPath(path)
            let (entry, raw) = try await connection.callBoth(.stat, PathParams(WirePath(relative)), as: Entry.self)
            let localPath = resolver.localPath(entry.path)
            // A suffix placeholder is a file of its own beside the name; a real-name one is the file.
            let suffixFile = localPath + ".nimbus"
            let placeholderFile = entry.state == "notDownloaded" && (try? kindOfPath(SystemPath(suffixFile))) == .file ? suffixFile : nil
            emit(raw) { Render.info(entry, localPath: localPath, placeholderFile: placeholderFile, context) }
        case .conflicts:
            let (result, raw) = try await connection.callBoth(.conflicts, NoParams(), as: ConflictsResult.self)
            emit(raw) { Render.conflicts(result.conflicts, context) }
        case let .resolve(path, keep):
            let relative = try resolver.protocolPath(path)
            let params = ResolveParams(path: WirePath(relative), keep: keep)
            let (result, raw) = try await connection.callBoth(.resolve, params, as: ResolveResult.self)
            emit(raw) { resolvedText(result) }
        case let .versions(path, all):
            guard all || path != nil else {
                throw UsageError(message: "missing PATH for 'nimbusctl versions'", reason: "give the file, or --all for every version kept",
                                 suggestion: "nimbusctl versions notes.txt, or nimbusctl versions --all")
            }
            let relative = try path.map { try resolver.protocolPath($0) }
            let params = VersionsParams(path: relative.map { WirePath($0) }, all: all ? true : nil)
            let (result, raw) = try await connection.callBoth(.versions, params, as: VersionsResult.self)
            emit(raw) { all ? Render.allVersions(result.versions, under: result.path, context) : Render.versions(result.versions, of: result.path, context) }
        case let .restore(path, version, target, at, dryRun):
            let relative = try resolver.protocolPath(path)
            let destination = try target.map { WirePath(try resolver.protocolPath($0)) }
            let time = try at.map { text in
                if Format.trimmedOfSpaces(text).hasPrefix("-") {
                    throw UsageError(message: "invalid value '\(text)' for --at: how long ago must be 0 or more",
                                     reason: "a duration counts back from now: 2h is two hours ago",
                                     suggestion: "nimbusctl restore \(ShellWord.quote(path)) --at \(ShellWord.quote(String(Format.trimmedOfSpaces(text).dropFirst())))")
                }
                guard let ns = Format.parseTime(text, now: context.now, utcOffsetSeconds: context.utcOffsetSeconds) else {
                    throw UsageError(message: "cannot read the time '\(text)' of --at",
                                     reason: "expected a date and time such as 2024-03-01 14:30 or 2024-03-01 14:30:05.25 (local time), 2024-03-01T14:30:00Z (UTC), or how long ago such as 2h, 30min, 3d",
                                     suggestion: "nimbusctl restore \(ShellWord.quote(path)) --at '2024-03-01 14:30'")
                }
                return ns
            }
            let params = RestoreParams(path: WirePath(relative), version: version, to: destination, atNs: time, dryRun: dryRun ? true : nil)
            let (result, raw) = try await connection.callBoth(.restore, params, as: RestoreResult.self)
            emit(raw) { Render.restored(result, context) }
        case .prune:
            let (result, raw) = try await connection.callBoth(.prune, NoParams(), as: PruneResult.self)
            emit(raw) {
                (result.removed == 0 ? "Nothing to prune" : "Removed " + Format.count(result.removed, "old version") + " ("
                    + Format.size(result.removedBytes) + ")") + "; " + Format.count(result.versionsCount, "version")
                    + " kept (" + Format.size(result.versionsBytes) + ")."
            }
        case .pause:
            let (_, raw) = try await connection.callBoth(.pause, NoParams(), as: PauseResult.self)
            emit(raw) { "Paused. Nothing syncs until " + context.cite("resume") + "." }
        case .resume:
            let (_, raw) = try await connection.callBoth(.resume, NoParams(), as: PauseResult.self)
            emit(raw) { "Resumed: syncing again." }
        case .rescan:
            let (result, raw) = try await connection.callBoth(.rescan, NoParams(), as: RescanResult.self)
            emit(raw) { "Rescanned both folders: " + Format.count(result.tracked, "entry", "entries") + " in sync." }
        case .confirmDeletes:
            let (result, raw) = try await connection.callBoth(.confirmDeletes, NoParams(), as: DeletesResult.self)
            emit(raw) { result.count == 0 ? "No deletions were held." : "Carried out " + Format.count(result.count, "held deletion") + "." }
        case .revertDeletes:
            let (result, raw) = try await connection.callBoth(.revertDeletes, NoParams(), as: DeletesResult.self)
            emit(raw) { result.count == 0 ? "No deletions were held." : "Undid " + Format.count(result.count, "deletion") + " (the held ones and those applied just before them); the files come back." }
        case let .download(paths, wait):
            return try await download(paths, wait: wait)
        case .open(let path):
            return try await open(path)
        case .evict(let paths):
            return try await each(paths, "Evicted") { try await connection.evict($0) }
        case .pin(let paths):
            return try await each(paths, "Pinned") { try await connection.pin($0) }
        case .unpin(let paths):
            return try await each(paths, "Unpinned") { try await connection.unpin($0) }
        case .watch:
            try await watch()
        case let .lock(path, shared, wait, command):
            return try await lock(path, shared: shared, wait: wait, command: command)
        case .locks:
            let (result, raw) = try await connection.callBoth(.locks, NoParams(), as: LocksResult.self)
            emit(raw) { LockCommand.render(result.locks) }
        case .completion, .help, .version:
            preconditionFailure("\(command) needs no daemon; NimbusCtl.main handles it")
        }
        return 0
    }

    /// The raw result with --json, else the human text.
    func emit(_ raw: JSONValue, human: () -> String) {
        console.out(style.json ? raw.jsonText : human())
    }

    func resolvedText(_ result: ResolveResult) -> String {
        let path = TerminalText.printable(result.path)
        return switch result.kept {
        case "local": "Kept this device's version of \(path); the cloud's is among its versions."
        case "cloud": "Kept the cloud's version of \(path); this device's is among its versions: see "
            + context.cite("versions", result.path) + "."
        default: "Kept both versions of \(path); the conflict copy stays a file of its own."
        }
    }

    func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    /// Reports a failure for one path of several, and goes on with the others.
    func report(_ failure: Failure) {
        if style.json {
            console.out(failure.json.jsonText)
        } else {
            console.err(failure.human(color: style.colorOnStandardError))
        }
    }
}
