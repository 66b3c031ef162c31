import NimbusCore
import NimbusSystem

/// A placeholder action the pair's style cannot carry out in this build.
struct PlaceholderStyleUnavailable: Error, CustomStringConvertible {
    var path: RelativePath
    var style: PlaceholderStyle
    var description: String {
        "cannot write the placeholder of \(path): \(style == .realName ? "real-name" : "\(style)") placeholders are not available "
            + "in this build; placeholders are written in the suffix style (NAME.nimbus)"
    }
}

/// The executor's placeholder operations, per style (DESIGN §5). The plan says what to do
/// (`writePlaceholder`, `removePlaceholder`, `renamePlaceholder` and the fold's repairs);
/// this is where the style decides how.
///
/// How the real-name style plugs in: implement `performRealNamePlaceholder` (write = a
/// sparse file of the cloud file's size, mtime and mode with `user.nimbus.state` set and a
/// fanotify mark, installed like any download; remove and rename = the file itself; `evict`
/// = punch the content out in place under the mark; the
/// suffix-only repairs `movePlaceholder`, `retirePlaceholder` and `repairPlaceholder` are
/// never planned for it), teach `downloadPlaceholder` and `evictFile` to fill and punch in
/// place, carry out `convertPlaceholder` (planned by `planPlaceholderConversion` when the
/// style of a pair changes: write the new placeholder, then remove the old one), and let
/// the configuration choose `placeholderStyle`. Until then `.realName` is refused with
/// `PlaceholderStyleUnavailable`, an ordinary sync error.
extension SyncEngine {
    var placeholderStyle: PlaceholderStyle { settings.placeholderStyle }

    func performPlaceholderAction(_ action: Action, batch: inout [PendingInstall]?) throws {
        if case .convertPlaceholder(let path, _, _, _) = action {
            // Converting between the two styles needs the real-name side, not carried out yet.
            throw PlaceholderStyleUnavailable(path: path, style: .realName)
        }
        switch placeholderStyle {
        case .suffix: try performSuffixPlaceholder(action, batch: &batch)
        case .realName: throw PlaceholderStyleUnavailable(path: action.path, style: .realName)
        }
    }

    /// Refuses what the pair's style cannot do yet (download, evict) with a clear error.
    func requirePlaceholderStyleAvailable(for path: RelativePath) throws {
        guard placeholderStyle == .suffix else {
            throw EngineRequestError(kind: .failed, message: "\(PlaceholderStyleUnavailable(path: path, style: placeholderStyle))")
        }
    }

    private func performSuffixPlaceholder(_ action: Action, batch: inout [PendingInstall]?) throws {
        switch action {
        case .writePlaceholder(let path, let source, let replacing):
            try writePlaceholder(path, source: source, replacing: replacing, batch: &batch)
        case .removePlaceholder(let path, let expected):
            try removePlaceholder(path, expected: expected)
        case .renamePlaceholder(let from, let to, let expected):
            try renamePlaceholder(from: from, to: to, expected: expected)
        case .movePlaceholder(let from, let to, let expected):
            try movePlaceholder(from: from, to: to, expected: expected)
        case .retirePlaceholder(let file, let expected):
            try retirePlaceholder(file, expected: expected)
        case .repairPlaceholder(let path, let file, let edited, let cloudFile):
            try repairPlaceholder(path, file: file, edited: edited, cloud: cloudFile)
        case .adoptPlaceholder(let path, let placeholder, let cloudFile):
            guard let file = Placeholder.file(for: path) else { return }
            try adoptPlaceholder(path, file: file, placeholder: placeholder, cloud: cloudFile)
        case .adoptLocalFile(let path, let here, let there):
            try adoptLocalFile(path, local: here, cloud: there)
        case .evict(let path, let here, let there):
            try evictToPlaceholder(path, expected: here, cloud: there)
        default:
            preconditionFailure("not a placeholder action: \(action)")
        }
    }
}
