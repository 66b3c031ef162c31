import NimbusVocabulary

/// Which kept versions to delete (DESIGN §4, issue #13): a staggered schedule like
/// Syncthing's, then a size limit. Pure, so that the schedule is pinned down by tables; the
/// daemon deletes what it returns.
///
/// Per file, newest first, a version is kept when
/// - it is younger than an hour (every version of the last hour stays), or
/// - it is at least an hour (younger than a day) or a day (older) older than the newer
///   version kept before it,
/// and never once it is older than the retention period. Then, while all that remains
/// weighs more than `maxBytes`, the oldest versions of all files go first.
public struct VersionRetention: Sendable, Equatable {
    /// One kept version: the file it belongs to, when it was displaced, its size.
    public struct Candidate: Hashable, Sendable {
        public var file: String
        public var id: String
        public var displacedAt: WallInstant
        public var size: Int64
        public init(file: String, id: String, displacedAt: WallInstant, size: Int64) {
            self.file = file
            self.id = id
            self.displacedAt = displacedAt
            self.size = size
        }
    }

    /// Versions older than this go, whatever else (default 30 days).
    public var retention: Duration
    /// The store's size limit in bytes; nil: no limit.
    public var maxBytes: Int64?

    public init(retention: Duration = .days(30), maxBytes: Int64? = nil) {
        self.retention = retention
        self.maxBytes = maxBytes
    }

    /// The gap the schedule asks between two kept versions of age `age`; zero: keep them all.
    func interval(forAge age: Duration) -> Duration {
        age < .hours(1) ? .zero : age < .days(1) ? .hours(1) : .days(1)
    }

    /// The versions to delete at `now`, oldest first.
    public func expired(_ candidates: [Candidate], now: WallInstant) -> [Candidate] {
        var doomed: [Candidate] = []
        var kept: [Candidate] = []
        let byFile = Dictionary(grouping: candidates, by: \.file)
        for file in byFile.keys.sorted() {
            var newerKept: WallInstant?
            for version in byFile[file]!.sorted(by: Self.newestFirst) {
                let age = now - version.displacedAt
                if age > retention {
                    doomed.append(version)
                } else if let newer = newerKept, newer - version.displacedAt < interval(forAge: age) {
                    doomed.append(version)
                } else {
                    kept.append(version)
                    newerKept = version.displacedAt
                }
            }
        }
        if let maxBytes {
            var total = kept.reduce(0) { $0 + $1.size }
            for version in kept.sorted(by: Self.newestFirst).reversed() where total > maxBytes {
                doomed.append(version)
                total -= version.size
            }
        }
        return doomed.sorted(by: Self.newestFirst).reversed()
    }

    /// Newer first; the id breaks ties so that the order never depends on the input's.
    static func newestFirst(_ a: Candidate, _ b: Candidate) -> Bool {
        a.displacedAt != b.displacedAt ? a.displacedAt > b.displacedAt : (a.file, a.id) > (b.file, b.id)
    }
}
