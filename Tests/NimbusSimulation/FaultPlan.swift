import NimbusTestSupport
import NimbusVocabulary

/// The operations of `FileSystem`, to aim faults at and count calls by.
public enum FileSystemOperation: String, CaseIterable, Hashable, Sendable {
    case metadata, scan, contentHash, readFile, writeFile, makeDirectory, makeSymlink, rename
    case removeFile, removeDirectory, setAttributes, prepareCopy, install, discard, synchronize
    case removeTemporaryFiles, spaceInfo, extendedAttribute, setExtendedAttribute, removeExtendedAttribute
    /// Another filesystem's `prepareCopy` reading its source from this one: the decorator of
    /// the source side sees the copy only through this.
    case copySource
}

/// When an injected error strikes.
public enum FaultTiming: Sendable, Hashable {
    /// The operation does not happen.
    case beforeOperation
    /// The operation happens, and the error is reported anyway: the lost reply of a network
    /// filesystem, after which the caller cannot know what was done. On `prepareCopy` this
    /// leaves the temporary file behind, which the protocol otherwise promises not to do.
    case afterOperation
}

/// What every operation throws once a `FaultyFileSystem` has crashed: the process is gone, so
/// nothing may react to it but the test harness.
public struct SimulatedCrash: Error, Hashable, Sendable, CustomStringConvertible {
    public let operation: FileSystemOperation
    public var description: String { "simulated crash (\(operation) after the power cut)" }
}

/// An explicit fault: strikes the next `remaining` calls of `operation` on `path` or below.
struct FaultRule {
    let operation: FileSystemOperation
    let path: RelativePath?
    let errno: Errno
    let timing: FaultTiming
    var remaining: Int

    func matches(_ operation: FileSystemOperation, _ paths: [RelativePath], _ timing: FaultTiming) -> Bool {
        guard operation == self.operation, timing == self.timing, remaining > 0 else { return false }
        guard let path else { return true }
        return paths.contains { path.contains($0) }
    }
}

/// The decorator's state behind its lock. Counting, crashing, rules, then random faults, in
/// that order, so a rule always beats chance and a crash beats everything.
struct FaultPlan {
    var random: SeededRandom
    var probabilities: [FileSystemOperation: Double]
    var randomErrors: [Errno]
    var rules: [FaultRule] = []
    var calls: [FileSystemOperation: Int] = [:]
    var injected: [SystemError] = []
    var crashed = false
    /// Operations still allowed before the crash, when one is scheduled.
    var operationsBeforeCrash: Int?

    /// Called before an operation: counts it and throws what is planned for it.
    mutating func admit(_ operation: FileSystemOperation, _ paths: [RelativePath]) throws {
        calls[operation, default: 0] += 1
        if let remaining = operationsBeforeCrash {
            if remaining == 0 {
                crashed = true
                operationsBeforeCrash = nil
            } else {
                operationsBeforeCrash = remaining - 1
            }
        }
        if crashed { throw SimulatedCrash(operation: operation) }
        try applyRule(operation, paths, .beforeOperation)
        // Only operations given a probability draw, so a run without random faults never
        // consumes the generator and the faults of a seed depend only on those operations.
        if let probability = probabilities[operation], probability > 0, !randomErrors.isEmpty,
           random.chance(probability) {
            let errno = randomErrors[Int(random.next() % UInt64(randomErrors.count))]
            throw inject(errno, operation, paths)
        }
    }

    /// Called after an operation that succeeded underneath. A crash that happened meanwhile
    /// (another thread pulled the plug) means the caller never hears of the result.
    mutating func conclude(_ operation: FileSystemOperation, _ paths: [RelativePath]) throws {
        if crashed { throw SimulatedCrash(operation: operation) }
        try applyRule(operation, paths, .afterOperation)
    }

    private mutating func applyRule(_ operation: FileSystemOperation, _ paths: [RelativePath],
                                    _ timing: FaultTiming) throws {
        guard let index = rules.firstIndex(where: { $0.matches(operation, paths, timing) }) else { return }
        rules[index].remaining -= 1
        let errno = rules[index].errno
        if rules[index].remaining == 0 { rules.remove(at: index) }
        throw inject(errno, operation, paths)
    }

    private mutating func inject(_ errno: Errno, _ operation: FileSystemOperation,
                                 _ paths: [RelativePath]) -> SystemError {
        let error = errno.at(operation.rawValue, paths.first.map(\.description) ?? "")
        injected.append(error)
        return error
    }
}
