import CNimbus
import Glibc
import NimbusVocabulary

// What nimbusctl and NimbusClient need of the system that would otherwise come from all of
// Foundation (FileHandle, TimeZone, Thread, FileManager attributes), which costs a
// command-line tool about 4 ms more at every start than FoundationEssentials alone.

extension ProcessSupport {
    /// Writes all of `text` to stdout or stderr with as few `write(2)` calls as it takes.
    public static func write(_ text: String, toStandardError: Bool) {
        let fd = toStandardError ? STDERR_FILENO : STDOUT_FILENO
        // A closed pipe (EPIPE): nothing more can be said, and no one to say it to.
        try? FileDescriptor(rawValue: fd).writeAll(Array(text.utf8))
    }

    /// Makes writing to a vanished reader an `EPIPE` error instead of a fatal SIGPIPE for the
    /// whole process. Sockets already send with `MSG_NOSIGNAL`; this also covers pipes, such
    /// as a log on stderr whose reader went away (`nimbusd … 2>&1 | head`, a terminal's
    /// closed pipe outside systemd): `write` above then fails and the line is dropped.
    /// Children get default actions again (`ChildProcess.spawn`). The C function is `signal`.
    public static func ignoreBrokenPipes() {
        _ = Glibc.signal(SIGPIPE, SIG_IGN)
    }

    /// The local time's offset from UTC now, in seconds (daylight saving included).
    /// The corresponding C function is `localtime_r`.
    public static var utcOffsetSeconds: Int {
        var now = time(nil)
        var parts = tm()
        guard localtime_r(&now, &parts) != nil else { return 0 }
        return parts.tm_gmtoff
    }

    /// Runs `body` on a new thread of its own (for a loop that blocks in a system call),
    /// named `name` (at most 15 bytes are kept) in `ps -L` and `/proc/PID/task/*/comm`.
    /// The corresponding C functions are `pthread_create` and `prctl(PR_SET_NAME)`.
    public static func detachThread(name: String? = nil, _ body: @escaping @Sendable () -> Void) {
        pthread_detach(startThread(name: name, body))
    }

    /// Runs `body` on a new thread of its own while the calling task is suspended, and returns
    /// what it returns: for a system call that can wait a long time (`waitpid`, a `connect`
    /// to a daemon that does not accept), which must not hold a thread of Swift's cooperative
    /// pool (one per core) that other tasks, however unrelated, are waiting for.
    public static func onThreadOfItsOwn<Value: Sendable>(name: String? = nil,
                                                         _ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            detachThread(name: name) { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Runs `body` on a new thread of its own, named as `detachThread` names it, which the
    /// caller must `join`. The corresponding C functions are `pthread_create` and `pthread_join`.
    public static func startJoinableThread(name: String? = nil, _ body: @escaping @Sendable () -> Void) -> JoinableThread {
        JoinableThread(thread: startThread(name: name, body))
    }

    private static func startThread(name: String?, _ body: @escaping @Sendable () -> Void) -> pthread_t {
        let run: @Sendable () -> Void
        if let name {
            run = {
                // PR_SET_NAME (15) names the calling thread; the kernel keeps 15 bytes.
                _ = name.withCString { cnimbus_prctl(15, UInt(bitPattern: $0), 0, 0, 0) }
                body()
            }
        } else {
            run = body
        }
        let box = Unmanaged.passRetained(ThreadBody(run)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { context in
            let body = Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue()
            body.run()
            return nil
        }, box)
        guard result == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(box).release()
            preconditionFailure("pthread_create failed: \(result)")
        }
        return thread
    }

    /// How many processors are online now (at least 1). The corresponding C function is `sysconf`.
    public static var onlineProcessors: Int { max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))) }

    /// The calling thread's identity, for checking which thread owns an object (debug checks).
    /// The corresponding C function is `pthread_self`.
    public static var currentThreadIdentity: UInt { UInt(pthread_self()) }

    /// Now on the wall clock. The corresponding C function is `clock_gettime`.
    public static var wallClock: WallInstant { WallInstant(nanoseconds: clockNanoseconds(CLOCK_REALTIME)) }

    /// Now on the monotonic clock. The corresponding C function is `clock_gettime`.
    public static var monotonicClock: MonotonicInstant { MonotonicInstant(nanoseconds: clockNanoseconds(CLOCK_MONOTONIC)) }

    private static func clockNanoseconds(_ clock: clockid_t) -> Int64 {
        var now = timespec()
        clock_gettime(clock, &now)
        return now.nanoseconds
    }

    /// The soft limit of open descriptors (RLIMIT_NOFILE), at most 65 536: the highest
    /// descriptor number this process, or one like it, can have been given.
    /// The corresponding C function is `getrlimit`.
    public static var openFileLimit: Int32 {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return Int32(min(limit.rlim_cur, 65_536))
    }

    /// Sleeps for `milliseconds` on this thread (a back-off after an unexpected failure, never
    /// a wait for an event). The corresponding C function is `nanosleep`.
    public static func pause(for interval: Duration) {
        Sys.sleep(timespec(nanoseconds: max(0, interval.nanosecondCount)))
    }

    /// Whether `path` itself (a symlink is not followed, so it is not a directory) is a
    /// directory, its owner's uid and its permission bits; nil when it cannot be looked at
    /// (it does not exist, say). The corresponding C function is `lstat`.
    public static func ownerAndMode(_ path: String) -> (isDirectory: Bool, owner: UInt32, mode: UInt32)? {
        guard let status = try? Sys.fstatat(AT_FDCWD, SystemPath(path), AT_SYMLINK_NOFOLLOW) else { return nil }
        return (status.st_mode & S_IFMT == S_IFDIR, status.st_uid, status.st_mode & 0o7777)
    }

    /// The path with every symlink resolved, or nil when it cannot be.
    /// The corresponding C function is `realpath`.
    public static func resolvingSymlinks(_ path: String) -> String? {
        (try? Sys.realpath(SystemPath(path))).map { String(decoding: $0, as: UTF8.self) }
    }
}

private final class ThreadBody: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// A thread started by `ProcessSupport.startJoinableThread`: `join` waits for its end and
/// must be called exactly once.
public struct JoinableThread: Sendable {
    let thread: pthread_t

    public func join() {
        let result = pthread_join(thread, nil)
        precondition(result == 0, "pthread_join failed: \(result)")
    }
}
