import NimbusVocabulary
import Synchronization
import NimbusTestSupport

/// A decorator that makes any `FileSystem` fail on purpose, in the manner of syncthing's
/// errorfs: explicit rules (`fail(.rename, path: p, with: .noSpace)`), random faults drawn
/// from a seed with a probability per operation, and a crash switch that plays a power cut.
///
/// Every call is counted per operation (`calls(_:)`), faulted or not. An injected fault is a
/// `SystemError` named after the operation and its first path, and is listed in
/// `injectedFaults` so a failing seed can say what went wrong.
///
/// Random faults replay from the seed only when calls arrive in the same order: drive the
/// engine from one task when replaying.
///
/// After a crash every operation throws `SimulatedCrash` and does nothing; what was done
/// before stays in the base filesystem. To restart the engine after a crash, wrap the same
/// base in a new `FaultyFileSystem`, so that nothing the dead engine still holds can act.
public final class FaultyFileSystem<Base: FileSystem>: FileSystem {
    public let base: Base
    private let plan: Mutex<FaultPlan>
    /// Where every operation that succeeds is recorded, under `label`, when given.
    let trace: (trace: OperationTrace, label: String)?

    /// - Parameters:
    ///   - random: the generator for random faults; its seed is what to print on failure.
    ///   - probabilities: the chance that a call of each operation fails (0 when absent).
    ///   - randomErrors: what a random fault throws, chosen uniformly.
    ///   - trace: where to record, in order, each operation that succeeds, and under what name.
    public init(_ base: Base, random: SeededRandom = SeededRandom(seed: 0),
                probabilities: [FileSystemOperation: Double] = [:], randomErrors: [Errno] = [.ioError],
                trace: (trace: OperationTrace, label: String)? = nil) {
        self.base = base
        plan = Mutex(FaultPlan(random: random, probabilities: probabilities, randomErrors: randomErrors))
        self.trace = trace
    }

    // MARK: Planning faults

    /// Makes the next `times` calls of `operation` on `path` — or anything below it, or any
    /// path when nil — throw `errno`. A rename or install matches on either of its paths.
    /// Rules are tried in the order given, before any random fault.
    ///
    /// `discard` cannot throw: a fault planned for it makes it silently leave the temporary
    /// file, as a best-effort unlink that failed would.
    public func fail(_ operation: FileSystemOperation, path: RelativePath? = nil, with errno: Errno,
                     times: Int = 1, timing: FaultTiming = .beforeOperation) {
        precondition(times > 0, "a fault must strike at least once")
        plan.withLock {
            $0.rules.append(FaultRule(operation: operation, path: path, errno: errno, timing: timing, remaining: times))
        }
    }

    /// The chance that a call of each operation fails; set it to [:] to let a run settle.
    public var probabilities: [FileSystemOperation: Double] {
        get { plan.withLock { $0.probabilities } }
        set { plan.withLock { $0.probabilities = newValue } }
    }

    /// Drops every rule not yet used up and every probability.
    public func removeAllFaults() {
        plan.withLock {
            $0.rules.removeAll()
            $0.probabilities.removeAll()
        }
    }

    /// Cuts the power now: every later operation throws `SimulatedCrash`.
    public func crash() {
        plan.withLock { $0.crashed = true }
    }

    /// Lets the next `count` operations happen, then cuts the power.
    public func crash(afterOperations count: Int) {
        precondition(count >= 0, "cannot crash \(count) operations from now")
        plan.withLock { $0.operationsBeforeCrash = count }
    }

    // MARK: Observing

    public var isCrashed: Bool { plan.withLock { $0.crashed } }

    /// How many times `operation` was called, including calls that were faulted.
    public func calls(_ operation: FileSystemOperation) -> Int {
        plan.withLock { $0.calls[operation, default: 0] }
    }

    /// Every error injected so far, oldest first.
    public var injectedFaults: [SystemError] { plan.withLock { $0.injected } }

    /// Runs `body` against the base between the plan's two checks.
    func perform<Result>(_ operation: FileSystemOperation, _ paths: [RelativePath],
                                 _ body: () throws -> Result) throws -> Result {
        try plan.withLock { try $0.admit(operation, paths) }
        let result = try body()
        try plan.withLock { try $0.conclude(operation, paths) }
        trace?.trace.append(trace!.label, operation.rawValue, paths)
        return result
    }
}
