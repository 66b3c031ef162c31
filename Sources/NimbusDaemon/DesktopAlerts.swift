import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// What a button on a desktop notification does; the raw value is the D-Bus action key.
enum DesktopAction: String, Sendable, CaseIterable {
    case confirmDeletes = "confirm-deletes"
    case revertDeletes = "revert-deletes"
    case showConflict = "show-conflict"

    var label: String {
        switch self {
        case .confirmDeletes: "Confirm deletions"
        case .revertDeletes: "Restore files"
        case .showConflict: "Show conflict"
        }
    }
}

/// One desktop notification to show, and what its actions act on.
struct DesktopAlert: Equatable, Sendable {
    var summary: String
    var body: String
    /// 0 low, 1 normal, 2 critical (stays until dismissed on most desktops).
    var urgency: UInt8 = 1
    var actions: [DesktopAction] = []
    /// The held deletions it asks about: its actions apply only while exactly these are held.
    var heldPaths: Set<RelativePath> = []
    /// The folder "Show conflict" opens.
    var folder: String?
    /// The notification this one takes the place of (what came of a button), or 0.
    var replacesID: UInt32 = 0
}

/// Decides which engine events become desktop notifications, each once per occurrence:
/// deletions newly held, a pair halted and a storm of refused fetches at once (the engine
/// reports each of them once); conflicts and errors gathered for `gatherWindow`, so that a
/// full disk failing 500 files is one notification, and an error retried every pass is told
/// again only after its path was fine in between. Pure: time comes in as `now`.
struct DesktopAlertFilter {
    let localRoot: String
    let cloudRoot: String
    /// `nimbusctl` and the options that reach this daemon (`--instance work`).
    let controlCommand: [String]

    static let gatherWindow: Duration = .seconds(2)

    /// Paths told about in an error notification and not fine since.
    private(set) var erroredPaths: Set<RelativePath> = []
    private var conflicts: [(path: RelativePath, copy: RelativePath)] = []
    private var errors: [(path: RelativePath, message: String)] = []
    private var gatheringSince: MonotonicInstant?

    init(localRoot: String, cloudRoot: String, controlCommand: [String]) {
        self.localRoot = localRoot
        self.cloudRoot = cloudRoot
        self.controlCommand = controlCommand
    }

    /// When `due` has something to give, or nil.
    var nextDeadline: MonotonicInstant? { gatheringSince.map { $0 + Self.gatherWindow } }

    /// The notifications `event` causes at once; conflicts and errors wait for `due`.
    mutating func absorb(_ event: EngineEvent, now: MonotonicInstant) -> [DesktopAlert] {
        switch event {
        case .deletionsHeld(let side, let paths, let applied):
            return paths.isEmpty ? [] : [deletionsHeld(on: side, paths, alreadyApplied: applied)]
        case .phase(.halted(let message)):
            return [DesktopAlert(summary: "Nimbus stopped syncing", body: message, urgency: 2)]
        case .fetchesRefused(let path, let limit, let program):
            return [fetchesRefused(path, limit: limit, program: program)]
        case .conflict(let path, let copy):
            conflicts.append((path, copy))
            if gatheringSince == nil { gatheringSince = now }
        case .error(let path, let message):
            guard erroredPaths.insert(path).inserted else { return [] }
            errors.append((path, message))
            if gatheringSince == nil { gatheringSince = now }
        case .stateChanged(let path, let state):
            // A retry in progress is not fine yet: only a settled state other than error is.
            if case .error = state { return [] }
            if state.isInProgress { return [] }
            erroredPaths.remove(path)
        case .removed(let path, _):
            erroredPaths.remove(path)
        case .phase, .renamed:
            break
        }
        return []
    }

    /// The gathered conflicts and errors, once the window since the first has passed.
    mutating func due(now: MonotonicInstant) -> [DesktopAlert] {
        guard let deadline = nextDeadline, now >= deadline else { return [] }
        gatheringSince = nil
        var alerts: [DesktopAlert] = []
        if !conflicts.isEmpty { alerts.append(conflictAlert(conflicts)) }
        if !errors.isEmpty { alerts.append(errorAlert(errors)) }
        conflicts = []
        errors = []
        return alerts
    }

    // MARK: - Texts (plain English, naming the paths; commands quoted for pasting)

    func localPath(_ path: RelativePath) -> String { path.isRoot ? localRoot : localRoot + "/" + path.description }

    func command(_ words: String...) -> String { ShellWord.command(controlCommand + words) }

    func list(_ paths: [RelativePath], limit: Int = 3) -> String {
        let shown = paths.prefix(limit).map(\.description).joined(separator: ", ")
        return paths.count > limit ? shown + " and \(paths.count - limit) more" : shown
    }

    func deletionsHeld(on side: Side, _ paths: [RelativePath], alreadyApplied: Int = 0) -> DesktopAlert {
        let (here, other) = side == .local ? ("your local folder \(localRoot)", "the cloud folder") : ("the cloud folder \(cloudRoot)", "your local folder")
        let count = paths.count == 1 ? "1 deletion" : "\(paths.count) deletions"
        let body = "\(paths.count == 1 ? "A file was" : "\(paths.count) files were") deleted in \(other), more than the safety limit "
            + "allows at once, so Nimbus has not deleted \(paths.count == 1 ? "it" : "them") from \(here) yet (\(list(paths.sorted()))). "
            + (alreadyApplied == 0 ? "" : "\(alreadyApplied == 1 ? "1 file" : "\(alreadyApplied) files") deleted from \(here) "
                + "just before are kept, and restoring brings \(alreadyApplied == 1 ? "it" : "them") back too. ")
            + "Confirm to delete them there too, or restore them to \(other). "
            + "In a terminal: \(command("confirm-deletes")) or \(command("revert-deletes"))."
        return DesktopAlert(summary: "Nimbus is holding \(count)", body: body, urgency: 2,
                            actions: [.confirmDeletes, .revertDeletes], heldPaths: Set(paths))
    }

    func conflictAlert(_ conflicts: [(path: RelativePath, copy: RelativePath)]) -> DesktopAlert {
        let paths = conflicts.map(\.path)
        let folders = Set(paths.map(\.parent))
        let folder = folders.count == 1 ? localPath(folders.first!) : localRoot
        guard conflicts.count == 1, let only = conflicts.first else {
            return DesktopAlert(summary: "\(conflicts.count) conflicts in Nimbus",
                                body: "These files were changed here and elsewhere: \(list(paths)). Both versions of each are kept; "
                                    + "see them with \(command("conflicts")).",
                                actions: [.showConflict], folder: folder)
        }
        let body = "\(localPath(only.path)) was changed here and on another device. Both versions are kept: this device's is "
            + "\(only.copy.lastComponentDescription). Choose with \(command("resolve", only.path.description, "--keep", "local")) "
            + "(or cloud, or both)."
        return DesktopAlert(summary: "Conflict: \(only.path.lastComponentDescription)", body: body,
                            actions: [.showConflict], folder: folder)
    }

    func errorAlert(_ errors: [(path: RelativePath, message: String)]) -> DesktopAlert {
        guard errors.count == 1, let only = errors.first else {
            return DesktopAlert(summary: "Nimbus cannot sync \(errors.count) files",
                                body: "\(list(errors.map(\.path))). The first: \(errors[0].message). "
                                    + "\(command("status")) lists them; Nimbus retries by itself.",
                                urgency: 2)
        }
        return DesktopAlert(summary: "Nimbus cannot sync \(only.path.lastComponentDescription)", body: only.message, urgency: 2)
    }

    func fetchesRefused(_ path: RelativePath, limit: Int, program: String?) -> DesktopAlert {
        let who = program.map { "\($0) opened \(localPath(path))" } ?? "the last was \(localPath(path))"
        return DesktopAlert(summary: "Nimbus refuses downloads on open for now",
                            body: "Files that are not downloaded are being opened faster than open-rate-limit = \(limit) a minute "
                                + "(\(who)): a search or an indexer? Such opens fail until it calms down. "
                                + "Download what you need with \(command("download", path.description)).")
    }
}

extension RelativePath {
    /// The last name, for a notification's short summary.
    var lastComponentDescription: String {
        let text = description
        return text.split(separator: "/").last.map(String.init) ?? text
    }
}
