import NimbusVocabulary
import Synchronization

/// One ordered record of what several parties did (the operations of `FaultyFileSystem`s
/// traced into it, a record store's commits), for tests of what must come before what: a
/// name changed, then its filesystem flushed, then the journal committed.
public final class OperationTrace: Sendable {
    public struct Entry: Sendable, Hashable, CustomStringConvertible {
        /// Who did it: the label given to the traced filesystem, or the store's.
        public var actor: String
        /// The operation's name (`FileSystemOperation.rawValue`, or `commit`).
        public var operation: String
        public var paths: [RelativePath]
        public var description: String { ([actor, operation] + paths.map(\.description)).joined(separator: " ") }
    }

    private let entries = Mutex<[Entry]>([])

    public init() {}

    public func append(_ actor: String, _ operation: String, _ paths: [RelativePath] = []) {
        entries.withLock { $0.append(Entry(actor: actor, operation: operation, paths: paths)) }
    }

    public var all: [Entry] { entries.withLock { $0 } }
}
