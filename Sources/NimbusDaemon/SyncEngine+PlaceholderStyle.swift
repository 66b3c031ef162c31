import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// A real-name placeholder action without the kernel's hooks (no marker: no privilege, an
/// old kernel, a filesystem without pre-content events).
struct PlaceholderStyleUnavailable: Error, CustomStringConvertible {
    var path: RelativePath
    var style: PlaceholderStyle
    var description: String {
        "cannot write the placeholder of \(path): real-name placeholders need the daemon's fanotify group, "
            + "which this pair does not have; placeholders are written in the suffix style (NAME.nimbus) instead"
    }
}

/// The executor's placeholder operations, per style (DESIGN §5). The plan says what to do
/// (`writePlaceholder`, `removePlaceholder`, `renamePlaceholder`, `evict`, the fold's repairs
/// and `convertPlaceholder` when a pair changes style); this is where the style decides how:
/// the suffix style here, the real-name style in `SyncEngine+RealNamePlaceholders.swift`.
extension SyncEngine {
    var placeholderStyle: PlaceholderStyle { settings.placeholderStyle }

    func performPlaceholderAction(_ action: Action, batch: inout [PendingInstall]?) throws {
        switch action {
        case .convertPlaceholder(let path, let style, let expected, let cloudFile):
            return try convertPlaceholder(path, to: style, expected: expected, cloud: cloudFile)
        // A suffix placeholder a blocked conversion left in the real-name style
        // (`foldPlaceholdersOfTheOtherStyle`): retired beside the user's file, or repaired
        // before it is converted.
        case .retirePlaceholder(let file, let expected):
            return try retirePlaceholder(file, expected: expected)
        case .repairPlaceholder(let path, let file, let edited, let cloudFile):
            return try repairPlaceholder(path, file: file, edited: edited, cloud: cloudFile)
        default:
            break
        }
        switch placeholderStyle {
        case .suffix: try performSuffixPlaceholder(action, batch: &batch)
        case .realName: try performRealNamePlaceholder(action, batch: &batch)
        }
    }

    /// The local file that stands for `path` in the pair's style (`path` itself for real names).
    func placeholderFile(for path: RelativePath) -> RelativePath? { placeholderStyle.file(for: path) }

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
