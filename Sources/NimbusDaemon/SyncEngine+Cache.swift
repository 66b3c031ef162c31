import NimbusCore
import NimbusSystem
import NimbusVocabulary

/// The cache budget (DESIGN §5, seed "Explorer"): downloaded, unpinned files are evicted,
/// least recently opened first, while they take more than `cache-limit` bytes, and when they
/// have not been opened for `evict-after`.
extension SyncEngine {
    /// Returns how many files were evicted. `keeping`: files just downloaded on request.
    @discardableResult
    public func enforceCacheBudget(keeping: Set<RelativePath> = []) -> Int {
        checkOwner()
        let s = settings
        guard s.cacheLimit != nil || s.evictAfter != nil else { return 0 }
        let now = clock.wallNow
        let candidates = state.withLock { st in
            st.index.all.compactMap { path, record -> (path: RelativePath, size: Int64, lastUse: WallInstant)? in
                guard record.base.kind == .file, !record.isPlaceholder, record.residency != .pinned,
                      placeholderFile(for: path) != nil else { return nil }
                return (path, record.base.local.size, max(record.lastOpened, WallInstant(mtime: record.base.local.mtime)))
            }
        }.filter { !isPinnedByFolder($0.path) }.sorted { $0.lastUse < $1.lastUse }
        // Files just downloaded count toward the budget; they are only not the ones to go.
        var total = candidates.reduce(Int64(0)) { $0 + $1.size }
        let open = ProcessSupport.openFiles()
        var evicted = 0
        var freed: Int64 = 0
        for candidate in candidates where !keeping.contains(candidate.path) {
            let overBudget = s.cacheLimit.map { total > $0 } ?? false
            let expired = s.evictAfter.map { now - candidate.lastUse > $0 } ?? false
            // Sorted by last use: once one is neither, so are all that follow.
            guard overBudget || expired else { break }
            do {
                // Within the budget (the check after every download and open), no flush is due.
                try changingNames(on: [.local]) { try evictFile(candidate.path, openFiles: open, automatic: true) }
                total -= candidate.size
                freed += candidate.size
                evicted += 1
            } catch {
                log.debug("cache budget: kept \(candidate.path): \(error)")
            }
        }
        if evicted > 0 {
            commit()
            log.notice("cache budget: evicted \(evicted) file(s), \(Self.bytes(freed)) freed; \(Self.bytes(total)) of downloaded files remain")
        }
        return evicted
    }
}
