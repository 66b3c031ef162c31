import Dispatch
import Foundation
import NimbusSystem
import NimbusVocabulary

/// Work on a thread of its own (the bench's writer while its main thread watches).
/// Who owns what: the work's thread writes `outcome` once, then signals `done`; `wait` reads
/// it only after `done`, so the semaphore orders the two. `@unchecked Sendable` for that `var`.
final class Background: @unchecked Sendable {
    struct Outcome {
        var started: Int64
        var seconds: Double
        var error: (any Error)?
    }

    private let done = DispatchSemaphore(value: 0)
    private var outcome: Outcome?

    init(_ work: @escaping @Sendable () throws -> Void) {
        let thread = Thread { [self] in
            let started = Monotonic.now
            var failure: (any Error)?
            do { try work() } catch { failure = error }
            outcome = Outcome(started: started, seconds: Monotonic.seconds(since: started), error: failure)
            done.signal()
        }
        thread.start()
    }

    func wait() -> Outcome {
        done.wait()
        done.signal()  // Later waits return at once.
        return outcome!
    }
}
