import NimbusVocabulary

/// How a file kept only in the cloud is stood for locally (DESIGN §5). The plan is the same
/// for both styles; what differs is where the placeholder lives, and so which name clashes
/// and repairs can happen at all.
///
/// A second style plugs in at three places: the naming here (`file(for:)`, `target(of:)`),
/// the fold (`foldPlaceholders`, which recognises this style's placeholders in a scan), and
/// the executor's per-style operations in the daemon (`SyncEngine+PlaceholderStyle.swift`),
/// which carry out `writePlaceholder`, `removePlaceholder`, `renamePlaceholder` and the
/// repairs the fold plans.
public enum PlaceholderStyle: String, Sendable, Hashable, CaseIterable {
    /// `dir/report.pdf.nimbus`: a small text file beside the name (`Placeholder`). Works on
    /// any filesystem without privilege; a cloud file whose own name ends in `.nimbus` can
    /// clash with another's placeholder, which the fold sorts out.
    case suffix
    /// `dir/report.pdf` itself, sparse, with its real size, mtime and mode, marked
    /// `user.nimbus.state=notDownloaded` and known as a placeholder by the journal; opened,
    /// it is filled by the kernel's pre-content hooks. No name of its own, so no clash.
    case realName

    /// The local file that stands for the cloud file `path`; nil when there is no room for
    /// it (a name too long for the suffix), and the file is then always downloaded.
    public func file(for path: RelativePath) -> RelativePath? {
        switch self {
        case .suffix: Placeholder.file(for: path)
        case .realName: path.isRoot ? nil : path
        }
    }

    /// The cloud file a local placeholder file stands for, by its name alone; nil when the
    /// name says nothing (every real-name file could be a placeholder: the journal decides).
    public func target(of file: RelativePath) -> RelativePath? {
        switch self {
        case .suffix: Placeholder.target(of: file)
        case .realName: nil
        }
    }

    /// Whether a placeholder has a name of its own, distinct from the file it stands for
    /// (and so may clash with a real file of that name, be renamed without it, or lose it).
    public var hasNameOfItsOwn: Bool { self == .suffix }
}
