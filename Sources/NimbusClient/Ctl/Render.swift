import NimbusProtocol
import NimbusVocabulary

/// Human output of each result. Pure: data and a context in, text out.
enum Render {
    // MARK: status

    /// The headline names the most urgent thing first (a stopped pair, held deletions with
    /// the two commands that decide, conflicts, errors, a pause), then the table says all.
    static func status(_ s: StatusResult, _ c: RenderContext) -> String {
        let (headline, paint) = statusHeadline(s, c)
        var table = Table([.left, .left])
        table.add(["Local", Table.Cell(s.localRoot)])
        table.add(["Cloud", Table.Cell(s.cloudRoot)])
        table.add(["Device", Table.Cell("\(s.deviceName) · instance \(s.instance) · nimbusd \(s.daemonVersion)")])
        if let fs = s.cloudFilesystem { table.add(["Cloud fs", Table.Cell(cloudFilesystem(fs))]) }
        table.add(["Files", Table.Cell(Format.count(s.tracked, "entry", "entries") + " in sync")])
        table.add(["Copied", Table.Cell(Format.count(s.filesCopied, "file") + " (" + Format.size(s.bytesCopied)
                                        + ") since nimbusd started " + c.ago(s.startedAtNs))])
        if let count = s.versionsCount, let bytes = s.versionsBytes {
            table.add(["Versions", Table.Cell(Format.count(count, "previous version") + " kept (" + Format.size(bytes)
                                              + "): see " + c.cite("versions", "--all"))])
        }
        if let style = s.placeholderStyle {
            // A label no wider than "Versions", so the table keeps its columns.
            let shown = style == "suffix" ? "placeholders named NAME.nimbus"
                : style == "real-name" ? "placeholders under their real names, fetched when opened" : style
            table.add(["Style", Table.Cell(shown + (s.placeholderStyleReason.map { " (" + $0 + ")" } ?? ""))])
        }
        if s.heldDeletes > 0 {
            table.add([Table.Cell("Held", .yellow),
                       Table.Cell(Format.count(s.heldDeletes, "deletion") + " held by the safety guard"
                                  + (s.keptDeletes.map { ", and " + Format.count($0, "deletion") + " of the same kind applied just before" } ?? ""))])
            table.add(["Carry out", Table.Cell(c.command("confirm-deletes"))])
            table.add(["Undo", Table.Cell(c.command("revert-deletes") + "  (brings the files back"
                                          + (s.keptDeletes == nil ? ")" : ", those deleted just before too)"))])
        }
        if s.conflicts > 0 {
            table.add([Table.Cell("Conflicts", .yellow),
                       Table.Cell(Format.count(s.conflicts, "file") + " changed on both sides: see " + c.cite("conflicts"))])
        }
        if let errors = s.errors, errors > 0 {
            table.add([Table.Cell("Errors", .red),
                       Table.Cell(Format.count(errors, "file") + (errors == 1 ? " failed to sync and is" : " failed to sync and are") + " retried: see "
                                  + c.cite("ls", "-r", "--state", "error"))])
        }
        if let error = s.journalError {
            table.add([Table.Cell("Journal", .red), Table.Cell(error)])
        }
        if let error = s.lastError {
            table.add([Table.Cell("Last error", .red), Table.Cell(error)])
        }
        let body = table.lines(color: c.color).map { "  " + $0 }.joined(separator: "\n")
        return c.paint("●", paint) + " " + c.paint(headline, .bold) + "\n" + body
    }

    /// The most urgent thing about the pair, in words, with its colour.
    static func statusHeadline(_ s: StatusResult, _ c: RenderContext) -> (String, Paint) {
        if s.phase == "halted" {
            return ("Stopped: " + (s.reason ?? "see the daemon's log"), .red)
        }
        if s.journalError != nil {
            return ("Needs you: the journal cannot be written; sync goes on, but a restart would check every change "
                    + "again (see the Journal line)", .red)
        }
        if s.heldDeletes > 0 {
            return ("Needs you: " + Format.count(s.heldDeletes, "deletion") + " held by the safety guard; decide with "
                    + c.command("confirm-deletes") + " or " + c.command("revert-deletes"), .yellow)
        }
        if s.conflicts > 0 {
            return ("Needs you: " + Format.count(s.conflicts, "conflict") + "; see " + c.cite("conflicts"), .yellow)
        }
        if let errors = s.errors, errors > 0 {
            return ("Needs you: " + Format.count(errors, "file") + " failed to sync; see " + c.cite("ls", "-r", "--state", "error"), .red)
        }
        if s.paused || s.phase == "paused" {
            return ("Paused: run " + c.cite("resume") + " to sync again", .yellow)
        }
        return switch s.phase {
        case "idle": ("Up to date", .green)
        case "syncing": ("Syncing", .blue)
        case "starting": ("Starting", .cyan)
        default: (s.phase, .bold)
        }
    }

    /// "fuse (network), replace by move-aside, create by link, content verified; mtime 1 s, no xattrs".
    static func cloudFilesystem(_ fs: CloudFilesystem) -> String {
        let precision = FilesystemCapabilities.describe(precision: .nanoseconds(fs.mtimePrecisionNs))
        return "\(fs.type)\(fs.network ? " (network)" : ""), replace by \(fs.replace), create by \(fs.create)"
            + (fs.verifiesContent ? ", content verified" : "") + "; mtime \(precision)" + (fs.xattrs ? "" : ", no xattrs")
    }

    // MARK: ls

    /// One row per entry: symbol, name, size, modified, and a note (progress, residency,
    /// conflict copy, error). Names are shown relative to `base`, the folder listed.
    static func entries(_ entries: [Entry], base: String, _ c: RenderContext) -> String {
        var table = Table([.left, .left, .right, .left, .left])
        for entry in entries {
            let isFolder = entry.kind == "directory"
            table.add([
                Table.Cell(StateSymbol.symbol(entry.state), StateSymbol.paint(entry.state)),
                Table.Cell(relative(entry.path, to: base) + (isFolder ? "/" : ""), isFolder ? .blue : nil),
                Table.Cell(isFolder ? "-" : Format.size(entry.size)),
                Table.Cell(c.ago(entry.mtimeNs), .dim),
                Table.Cell(note(entry), entry.state == "error" ? .red : nil),
            ])
        }
        return table.render(color: c.color)
    }

    static func note(_ entry: Entry) -> String {
        var parts: [String] = []
        if let progress = entry.progress { parts.append(Format.percent(progress)) }
        if entry.residency != "auto" { parts.append(entry.residency) }
        if let copy = entry.conflictCopy { parts.append("this device's version: \(copy)") }
        if let message = entry.message { parts.append(message) }
        return parts.joined(separator: "; ")
    }

    /// `Documents/a/b.txt` shown from `Documents` is `a/b.txt`; the root shows everything.
    static func relative(_ path: String, to base: String) -> String {
        guard !base.isEmpty, path.hasPrefix(base + "/") else { return path }
        return String(path.dropFirst(base.count + 1))
    }

    /// What a command on one path did: "Evicted a.txt.", the root being "the whole folder".
    static func done(_ verb: String, _ path: String) -> String {
        "\(verb) \(path.isEmpty ? "the whole folder" : TerminalText.printable(path))."
    }

    // MARK: info

    /// `placeholderFile`: where a not-downloaded file's suffix placeholder is (`NAME.nimbus`);
    /// nil when the placeholder is the file itself (real names).
    static func info(_ e: Entry, localPath: String, placeholderFile: String?, _ c: RenderContext) -> String {
        var table = Table([.left, .left])
        table.add(["Path", Table.Cell(e.path.isEmpty ? "(the synced folder)" : e.path)])
        let state = StateSymbol.symbol(e.state) + " " + StateSymbol.words(e.state) + (e.progress.map { " " + Format.percent($0) } ?? "")
        table.add(["State", Table.Cell(state, StateSymbol.paint(e.state))])
        if let message = e.message { table.add(["Problem", Table.Cell(message, .red)]) }
        if let copy = e.conflictCopy { table.add(["Conflict copy", Table.Cell("\(copy) (this device's version)")]) }
        table.add(["Kind", Table.Cell(e.kind)])
        if e.kind != "directory" { table.add(["Size", Table.Cell("\(Format.size(e.size)) (\(e.size) bytes)")]) }
        table.add(["Modified", Table.Cell("\(c.ago(e.mtimeNs)) (\(c.localDateTime(e.mtimeNs)))")])
        table.add(["Residency", Table.Cell(residencyWords(e.residency))])
        table.add(["On disk", Table.Cell(e.state == "notDownloaded" ? (placeholderFile ?? localPath) + " (placeholder)" : localPath)])
        return table.render(color: c.color)
    }

    static func residencyWords(_ residency: String) -> String {
        switch residency {
        case "auto": "auto (kept or evicted as space requires)"
        case "pinned": "pinned (always kept here)"
        case "evicted": "evicted (only a placeholder here)"
        default: residency
        }
    }

    // MARK: conflicts, versions

    static func conflicts(_ conflicts: [ConflictInfo], _ c: RenderContext) -> String {
        guard !conflicts.isEmpty else { return "No conflicts." }
        var table = Table([.left, .left, .left])
        for conflict in conflicts {
            table.add([Table.Cell("!", .yellow), Table.Cell(conflict.path), Table.Cell("this device's version: \(conflict.conflictCopy)", .dim)])
        }
        return table.render(color: c.color) + "\n\n"
            + Format.count(conflicts.count, "conflict") + ". Settle one with: " + c.program + " resolve PATH --keep local|cloud|both"
    }

    static func versions(_ versions: [VersionInfo], of path: String, _ c: RenderContext) -> String {
        guard !versions.isEmpty else { return "No previous versions of \(TerminalText.printable(path)) are kept." }
        var table = Table([.left, .right, .left, .left])
        table.add([Table.Cell("VERSION", .dim), Table.Cell("SIZE", .dim), Table.Cell("MODIFIED", .dim), ""])
        for version in versions {
            table.add([Table.Cell(version.id), Table.Cell(Format.size(version.size)),
                       Table.Cell(c.localDateTime(version.mtimeNs)), Table.Cell(c.ago(version.mtimeNs), .dim)])
        }
        return table.render(color: c.color) + "\n\nRestore one with: " + c.command("restore", path, "--version", "VERSION")
    }

    /// Every version kept (`versions --all`): file, version, size, when written; then the total.
    static func allVersions(_ versions: [VersionInfo], under folder: String, _ c: RenderContext) -> String {
        let place = folder.isEmpty ? "" : " in \(TerminalText.printable(folder))"
        guard !versions.isEmpty else { return "No previous versions are kept\(place)." }
        var table = Table([.left, .left, .right, .left])
        table.add([Table.Cell("FILE", .dim), Table.Cell("VERSION", .dim), Table.Cell("SIZE", .dim), Table.Cell("MODIFIED", .dim)])
        for version in versions {
            table.add([Table.Cell(version.path ?? "?"), Table.Cell(version.id), Table.Cell(Format.size(version.size)),
                       Table.Cell(c.localDateTime(version.mtimeNs))])
        }
        let files = Set(versions.map { $0.path ?? "" }).count
        let total = versions.reduce(Int64(0)) { $0 + $1.size }
        return table.render(color: c.color) + "\n\n" + Format.count(versions.count, "version") + " of "
            + Format.count(files, "file") + place + ", " + Format.size(total) + ". Restore one with: " + c.program
            + " restore FILE --version VERSION"
    }

    /// What `restore` brought back, or would (`--dry-run`).
    static func restored(_ r: RestoreResult, _ c: RenderContext) -> String {
        let path = TerminalText.printable(r.path)
        if r.files.count == 1, r.files[0].path == r.path {
            let file = r.files[0]
            return (r.dryRun ? "Would restore" : "Restored") + " version \(TerminalText.printable(file.version)) of \(path)"
                + (file.restoredTo == r.path ? "" : " as \(TerminalText.printable(file.restoredTo))")
                + (r.dryRun ? "." : ". It is in the cloud folder now and syncs here like any change.")
        }
        guard !r.files.isEmpty else { return "Nothing to restore in \(path): every file is as it was then." }
        var table = Table([.left, .right, .left])
        for file in r.files {
            table.add([Table.Cell(file.restoredTo), Table.Cell(Format.size(file.size)), Table.Cell("version \(file.version)", .dim)])
        }
        let head = (r.dryRun ? "Would restore " : "Restored ") + Format.count(r.files.count, "file") + " of \(path)"
            + (r.restoredTo == r.path ? "" : " into \(TerminalText.printable(r.restoredTo))") + ":"
        let tail = r.dryRun ? "\n\nNothing was changed. Restore them with the same command without --dry-run."
                            : "\n\nThey are in the cloud folder now and sync here like any change."
        return head + "\n" + table.render(color: c.color) + tail
    }

    // MARK: watch

    /// One line per event; nil for those too chatty to show (the syncing and idle phases). A
    /// type this version does not know (a newer daemon's) is shown by its name.
    static func event(_ event: EventParams, _ c: RenderContext) -> String? {
        let e = event.printable
        let time = c.paint(c.localClock(e.timeNs), .dim)
        let path = e.path ?? ""
        switch e.type {
        case "state":
            let state = e.state ?? "?"
            let detail = state == "error" ? ": " + (e.message ?? "") : ""
            return "\(time)  \(c.paint(StateSymbol.symbol(state), StateSymbol.paint(state))) \(path)  \(StateSymbol.words(state))\(detail)"
        case "conflict":
            return "\(time)  \(c.paint("!", .yellow)) \(path)  conflict; this device's version is \(e.conflictCopy ?? "kept")"
        case "error":
            return "\(time)  \(c.paint("✗", .red)) \(path)  \(e.message ?? "failed")"
        case "phase":
            // Syncing and idle alternate with every change; the lines about files say it.
            guard let phase = e.phase, phase != "syncing", phase != "idle" else { return nil }
            return "\(time)  phase: \(phase)" + (e.reason.map { " (\($0))" } ?? "")
        case "deleted":
            let where_ = e.side == "cloud" ? "deleted in the cloud folder (kept among the versions)" : "deleted here"
            return "\(time)  \(c.paint("−", .red)) \(path)  \(where_)"
        case "renamed":
            let where_ = e.side == "cloud" ? "renamed in the cloud folder" : "renamed here"
            return "\(time)  \(c.paint("→", .blue)) \(e.from ?? "?") → \(path)  \(where_)"
        case "deletions-held":
            let count = e.count ?? e.paths?.count ?? 1
            let folder = e.side == "local" ? "held here" : "held in the cloud folder"
            let shown = e.paths ?? (e.path.map { [$0] } ?? [])
            let more = count > shown.count ? " and \(count - shown.count) more" : ""
            let list = shown.isEmpty ? "" : ": " + shown.joined(separator: ", ") + more
            let kept = e.keptDeletes.map { "; and \(Format.count($0, "deletion")) of the same kind applied just before, kept" } ?? ""
            return "\(time)  \(c.paint("‖", .yellow)) \(Format.count(count, "deletion")) \(folder), more at once than the safety limit allows\(list)\(kept); "
                + c.cite("confirm-deletes") + " applies them, " + c.cite("revert-deletes") + " restores the files"
                + (e.keptDeletes == nil ? "" : ", those deleted just before too")
        case "fetches-refused":
            let who = e.program.map { "\($0) opened \(path)" } ?? "the last was \(path)"
            let limit = e.limit.map { " = \($0) a minute" } ?? ""
            return "\(time)  \(c.paint("✗", .red)) not-downloaded files opened faster than open-rate-limit\(limit) (\(who)): "
                + "such opens fail for now; " + c.cite("download", event.path ?? "") + " fetches what you need"
        case "overflow":
            return "\(time)  some events were dropped; " + c.cite("ls", "-r") + " shows the current state"
        default:
            let detail = [e.path, e.message].compactMap { $0 }.joined(separator: "  ")
            return "\(time)  \(e.type)" + (detail.isEmpty ? "" : "  " + detail)
        }
    }
}
