/// The sync state of one path (DESIGN §2). The raw names are part of the control protocol
/// and of the `user.nimbus.state` xattr.
public enum FileState: Hashable, Sendable {
    /// Only here: new and waiting to upload, or excluded by an ignore rule.
    case local
    case uploading(progress: Double)
    /// In the cloud; locally only a placeholder.
    case notDownloaded
    case downloading(progress: Double)
    /// Both sides hold the same content.
    case downloaded
    /// Downloaded, but the cloud has a newer version not yet fetched.
    case outdated
    /// Both sides changed since the last sync; both versions are kept.
    case conflict
    /// The last operation failed; the message says why and what to do.
    case error(String)

    public var name: String {
        switch self {
        case .local: "local"
        case .uploading: "uploading"
        case .notDownloaded: "notDownloaded"
        case .downloading: "downloading"
        case .downloaded: "downloaded"
        case .outdated: "outdated"
        case .conflict: "conflict"
        case .error: "error"
        }
    }

    public static let allNames = ["local", "uploading", "notDownloaded", "downloading", "downloaded",
                                  "outdated", "conflict", "error"]

    /// Readable right now from the local folder.
    public var isAvailable: Bool {
        switch self {
        case .local, .uploading, .downloaded, .outdated, .conflict: true
        case .notDownloaded, .downloading, .error: false
        }
    }

    public var isInProgress: Bool {
        switch self {
        case .uploading, .downloading: true
        default: false
        }
    }

    /// The cloud holds something newer than what is here.
    public var needsUpdate: Bool {
        switch self {
        case .outdated, .notDownloaded: true
        default: false
        }
    }

    public var progress: Double? {
        switch self {
        case .uploading(let p), .downloading(let p): p
        default: nil
        }
    }

    public var message: String? {
        if case .error(let message) = self { return message }
        return nil
    }
}
