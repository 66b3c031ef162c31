#if DEBUG
import Glibc

/// Faults the syscall seam injects into the system calls of one thread, so tests can prove
/// that every loop above the seam survives what the kernel is allowed to do but rarely does
/// on a quiet machine: a call interrupted by a signal (`EINTR`) and a read or write that moves
/// fewer bytes than asked. Debug builds only: a release build has no hook and pays nothing.
///
/// The faults are per thread (`swift test` runs suites in parallel in one process, and another
/// suite's calls must not see them) and last while `inject` runs:
///
///     let faults = SyscallFaults(interruptEveryCall: true, transferLimit: 3)
///     try faults.inject { try file.writeAll(bytes) }
///     #expect(faults.shortenedTransfers > 0)
public final class SyscallFaults {
    /// Every call through `retrying` fails once with `EINTR` before it is really made.
    public let interruptEveryCall: Bool
    /// Reads and writes (`read`, `pread`, `write`, `pwrite`, `send`, `recv`,
    /// `copy_file_range`) ask the kernel for at most this many bytes.
    public let transferLimit: Int?
    /// Runs right after each `renameat2` of this thread that succeeds, with the new name: the
    /// moment a file has its name, when another program may already open it and write.
    public let afterRename: ((SystemPath) -> Void)?
    /// Runs right before each `unlinkat` of this thread, with the name: a program that saves the
    /// file at the last moment before it is removed.
    public let beforeUnlink: ((SystemPath) -> Void)?
    /// Runs right after each `fsync`, `fdatasync` or `syncfs` of this thread that succeeds,
    /// with the descriptor: a test records what was flushed, and in which order.
    public let afterSync: ((Int32) -> Void)?

    /// How many `EINTR`s were injected, and how many transfers were cut short: a test checks
    /// them to be sure the faults really happened.
    public private(set) var interruptions = 0
    public private(set) var shortenedTransfers = 0
    /// True between a forced EINTR and the attempt after it, which goes through.
    private var interruptedLastAttempt = false

    /// `afterRename` and `beforeUnlink` act as another program would at the worst moment: they
    /// run on this thread, inside the call, and must not call back into `Sys` with a rename or
    /// an unlink of their own (they would run again).
    public init(interruptEveryCall: Bool = false, transferLimit: Int? = nil,
                afterRename: ((SystemPath) -> Void)? = nil, beforeUnlink: ((SystemPath) -> Void)? = nil,
                afterSync: ((Int32) -> Void)? = nil) {
        precondition(transferLimit.map { $0 > 0 } ?? true, "a transfer limit must let at least one byte through")
        self.interruptEveryCall = interruptEveryCall
        self.transferLimit = transferLimit
        self.afterRename = afterRename
        self.beforeUnlink = beforeUnlink
        self.afterSync = afterSync
    }

    /// Runs `body` with these faults injected into the calling thread's system calls (the
    /// ones it makes itself; other threads are untouched). Nests: the inner faults win.
    public func inject<R>(_ body: () throws -> R) rethrows -> R {
        let previous = pthread_getspecific(Self.key)
        pthread_setspecific(Self.key, Unmanaged.passUnretained(self).toOpaque())
        defer { pthread_setspecific(Self.key, previous) }
        return try body()
    }

    /// The faults of the calling thread, if a test installed some.
    private static var current: SyscallFaults? {
        pthread_getspecific(key).map { Unmanaged<SyscallFaults>.fromOpaque($0).takeUnretainedValue() }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key left for SyscallFaults")
        return key
    }()

    /// Whether `retrying` must act as if this attempt had failed with `EINTR`: every other
    /// attempt, so each call is interrupted once and then made.
    static func interruptsThisAttempt() -> Bool {
        guard let faults = current, faults.interruptEveryCall else { return false }
        faults.interruptedLastAttempt.toggle()
        if faults.interruptedLastAttempt { faults.interruptions += 1 }
        return faults.interruptedLastAttempt
    }

    /// Runs the test's `afterRename` for the name `to` was just given.
    static func renamed(to name: SystemPath) { current?.afterRename?(name) }

    /// Runs the test's `afterSync` for the descriptor just flushed.
    static func synced(_ fd: Int32) { current?.afterSync?(fd) }

    /// Runs the test's `beforeUnlink` for the name about to be removed.
    static func unlinking(_ name: SystemPath) { current?.beforeUnlink?(name) }

    /// `wanted`, or the transfer limit when a test set a smaller one.
    static func limitTransfer(_ wanted: Int) -> Int {
        guard let faults = current, let limit = faults.transferLimit, wanted > limit else { return wanted }
        faults.shortenedTransfers += 1
        return limit
    }
}
#endif
