import NimbusCore
import NimbusSystem
import NimbusVocabulary
import Synchronization

/// Downloads on demand and the cache budget at run time (DESIGN §5).
extension PairRuntime {
    /// Downloads `path` on the engine thread. Requests for a path whose download is already
    /// waiting or running join it: one copy, every requester answered with its result. A
    /// person's request that joins an automatic one lends it the person's free-space rule.
    public func download(_ path: RelativePath, _ request: DownloadRequest,
                         completion: @escaping DownloadCompletion) {
        let isFirst = downloads.withLock { waiting in
            let isFirst = waiting[path] == nil
            waiting[path, default: PendingDownload(request: request)].join(request, completion)
            return isFirst
        }
        guard isFirst else { return }
        perform { [self] in
            let request = downloads.withLock { $0[path]?.request } ?? request
            let result: Result<EntryInfo?, any Error>
            if engine.isPaused {
                result = .failure(EngineRequestError(kind: .paused, message: "sync is paused, so \(path) is not downloaded now"))
            } else {
                result = Result { try engine.download(path, request) }
            }
            let waiting = downloads.withLock { $0.removeValue(forKey: path)?.completions ?? [] }
            for completion in waiting { completion(result) }
        }
    }

    /// At the stop: the downloads asked for and never started (their work was posted after the
    /// stop, and the loop ended first) are answered that the daemon is stopping, instead of
    /// leaving their clients waiting until the control server closes their connections.
    func answerDownloadsNeverStarted() {
        let waiting = downloads.withLock { pending in
            defer { pending.removeAll() }
            return pending.values.flatMap(\.completions)
        }
        for completion in waiting { completion(.failure(CancellationError())) }
    }

    /// A program opened `path` in the local folder: a placeholder is downloaded (within the
    /// rate limit), a real file's last use is noted for the cache budget.
    func opened(_ path: RelativePath) {
        // Real-name placeholders are fetched by the kernel's hooks (HydrationServer), not here.
        guard engine.settings.placeholderStyle == .suffix, let target = Placeholder.target(of: path),
              engine.isPlaceholderStandIn(path) else {
            return engine.noteOpened(path)
        }
        guard options.hydrateOnOpen, options.openRateLimit > 0, !engine.isPaused else { return }
        switch openLimiter.admit(now: clock.monotonicNow) {
        case .allowed:
            log.info("\(path) was opened: downloading \(target)")
            download(target, .automatic) { [log] result in
                if case .failure(let error) = result { log.warning("cannot download \(target) on open: \(error)") }
            }
        case .refused(let first):
            if first {
                log.warning("placeholders are being opened faster than open-rate-limit = \(options.openRateLimit) downloads a minute "
                            + "(a search or an indexer?): further downloads on open are refused until it calms down; "
                            + "use 'nimbusctl download' for what you need")
                engine.emit(.fetchesRefused(target, limit: options.openRateLimit, program: nil))
            }
        }
    }

    /// Evicts what the cache budget says must go; at start and every `cacheCheckInterval`.
    func checkCacheBudget(now: MonotonicInstant) {
        guard now >= nextCacheCheck else { return }
        nextCacheCheck = now + Self.cacheCheckInterval
        engine.enforceCacheBudget()
    }

    static var cacheCheckInterval: Duration { .minutes(10) }
}

/// Who waits for a download: called with the entry afterwards, or the error.
public typealias DownloadCompletion = @Sendable (Result<EntryInfo?, any Error>) -> Void

/// A download asked for and not finished: who waits, and the strongest rule asked for.
/// Together with `PairRuntime.downloads` this is the one "in-flight download per path"
/// (DESIGN §5): callbacks, since downloads run on the engine thread, not in tasks.
struct PendingDownload {
    var request: DownloadRequest
    var completions: [DownloadCompletion] = []

    mutating func join(_ request: DownloadRequest, _ completion: @escaping DownloadCompletion) {
        if request == .explicit { self.request = .explicit }
        completions.append(completion)
    }
}
