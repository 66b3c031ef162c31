import NimbusVocabulary

// How the lock table finds, for a path, the locks on it, above it and below it.

/// A path with its ancestors (parent first, root last), worked out once per request because
/// every index operation walks them.
struct PathChain: Sendable {
    let path: RelativePath
    let ancestors: [RelativePath]

    init(_ path: RelativePath) {
        var ancestors: [RelativePath] = []
        ancestors.reserveCapacity(path.depth)
        var ancestor = path
        while !ancestor.isRoot {
            ancestor = ancestor.parent
            ancestors.append(ancestor)
        }
        self.path = path
        self.ancestors = ancestors
    }
}

/// Lock counts by path, plus for every directory the counts of locks strictly below it, so
/// "does anything here, above or below, conflict?" costs one look-up per ancestor, not a scan.
struct PathIndex: Sendable {
    struct Counts: Sendable {
        var shared = 0
        var exclusive = 0

        func conflicts(with mode: LockMode) -> Bool {
            mode == .exclusive ? shared + exclusive > 0 : exclusive > 0
        }

        /// Adds `delta` locks of `mode`; true when none are left.
        mutating func add(_ delta: Int, _ mode: LockMode) -> Bool {
            switch mode {
            case .shared: shared += delta
            case .exclusive: exclusive += delta
            }
            assert(shared >= 0 && exclusive >= 0, "lock index underflow")
            return shared == 0 && exclusive == 0
        }
    }

    private var at: [RelativePath: Counts] = [:]
    private var below: [RelativePath: Counts] = [:]

    func conflicts(_ chain: PathChain, _ mode: LockMode) -> Bool {
        if at.isEmpty { return false }
        if at[chain.path]?.conflicts(with: mode) == true || below[chain.path]?.conflicts(with: mode) == true {
            return true
        }
        return chain.ancestors.contains { at[$0]?.conflicts(with: mode) == true }
    }

    mutating func insert(_ chain: PathChain, _ mode: LockMode) { adjust(chain, mode, by: 1) }
    mutating func remove(_ chain: PathChain, _ mode: LockMode) { adjust(chain, mode, by: -1) }

    private mutating func adjust(_ chain: PathChain, _ mode: LockMode, by delta: Int) {
        // Keys whose counts drop to zero go, so the index stays as small as the table.
        if at[chain.path, default: Counts()].add(delta, mode) { at[chain.path] = nil }
        for ancestor in chain.ancestors {
            if below[ancestor, default: Counts()].add(delta, mode) { below[ancestor] = nil }
        }
    }
}
