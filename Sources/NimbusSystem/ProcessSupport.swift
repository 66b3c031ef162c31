import CNimbus
import Glibc
import NimbusVocabulary

/// Small facts and services about the running process, so executables need not import Glibc.
public enum ProcessSupport {
    /// The real user id. The corresponding C function is `getuid`.
    public static var userID: UInt32 { getuid() }

    /// This process's id. The corresponding C function is `getpid`.
    public static var processID: Int32 { getpid() }

    /// The running kernel's release ("6.14.0-1-amd64"). The corresponding C function is `uname`.
    public static var kernelRelease: String {
        var name = utsname()
        uname(&name)
        return withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// The whole content of `path`, or nil when it does not exist.
    public static func readFileIfExists(_ path: String, limit: Int = 1 << 20) throws -> [UInt8]? {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(SystemPath(path))
        } catch let error as Errno where error == .noSuchFile {
            return nil
        } catch let error as Errno {
            throw error.at("open", path)
        }
        return try fd.closeAfter {
            let bytes = try fd.readAll()
            guard bytes.count <= limit else { throw Errno.fileTooLarge.at("read", path) }
            return bytes
        }
    }

    /// Replaces `path` by a file holding `text`, written beside it and renamed over it, so a
    /// reader never sees half of it; not flushed: for notes that only make a message more
    /// helpful, which a crash may take along (the "served" note in the runtime folder). A
    /// flush would cost a filesystem commit at every start. The temporary name holds the pid,
    /// so two processes writing the same note do not share one.
    public static func writeNote(_ text: String, to path: String) throws {
        let here = FileDescriptor(rawValue: AT_FDCWD)
        let temporary = SystemPath(path + ".\(getpid()).tmp")
        do {
            let fd = try FileDescriptor.open(temporary, [.writeOnly, .create, .truncate], permissions: 0o600)
            try fd.closeAfter { try fd.writeAll(Array(text.utf8)) }
            try here.rename(temporary, to: SystemPath(path))
        } catch let error as Errno {
            try? here.removeFile(temporary)
            throw error.at("write", path)
        }
    }

    /// Gives glibc's allocator one arena, for a daemon that lives long and whose resident
    /// size users watch (issue 15); call it before any thread starts. Each thread that
    /// allocates (the copy workers) would otherwise get an arena of its own, whose pages stay
    /// partly used between passes; those threads allocate little (their buffers are large
    /// blocks, mapped on their own). After the first sync of 100 000 files, the settled
    /// daemon's anonymous memory was 39.3 and 38.2 MiB with one arena, 42.5 to 47.7 MiB
    /// without (`/proc/PID/status` RssAnon). A fixed mmap threshold saved about as much, but with
    /// one arena it tripled the first sync's CPU time in one run: not set. The corresponding
    /// C function is `mallopt`.
    public static func useOneAllocatorArena() {
        _ = CNimbus.mallopt(M_ARENA_MAX, 1)
    }

    /// Hands memory freed after a large pass back to the system. glibc keeps freed heap
    /// pages for reuse, so without this the resident size stays at the peak of the biggest
    /// pass ever made; the code the pass ran stays mapped too (`ExecutablePages`). The
    /// corresponding C function is `malloc_trim`.
    public static func returnFreeMemory() {
        ExecutablePages.release()
        _ = CNimbus.malloc_trim(0)
    }

    /// Holds `signals` back from every thread started after this call (threads inherit the
    /// mask), until `handleSignals` takes them: a signal that arrives in between stays pending
    /// instead of being lost or killing the process. Call it first thing in `main`, before any
    /// thread starts. The corresponding C function is `pthread_sigmask`.
    public static func blockSignals(_ signals: [Int32]) {
        var set = signalSet(signals)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Delivers `signals` to `handler`, one at a time, on a thread of its own that waits for
    /// them (`sigwaitinfo`), instead of their default action; for the life of the process.
    /// `blockSignals` must have held them back from every thread first.
    ///
    /// Not Dispatch's signal sources: on Linux those set the signal to SIG_IGN and install
    /// their own handler later, on the manager thread, which blocks it there only; a SIGTERM
    /// delivered meanwhile, or to another thread, was dropped (7 of 60 right after READY=1
    /// under CPU load), and `systemctl stop` waited for its timeout. A blocked signal waits
    /// in the process's pending set until this thread takes it; nothing can drop it. Children
    /// are spawned with an empty mask (`ChildProcess`), so they do not inherit the block.
    public static func handleSignals(_ signals: [Int32], _ handler: @escaping @Sendable (Int32) -> Void) {
        blockSignals(signals)
        let numbers = signals
        detachThread(name: "nimbus-signals") {
            var set = signalSet(numbers)
            while true {
                let number = sigwaitinfo(&set, nil)
                if number > 0 { handler(number) }  // -1: EINTR (another signal's handler ran)
            }
        }
    }

    private static func signalSet(_ signals: [Int32]) -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for number in signals { sigaddset(&set, number) }
        return set
    }

    public static let terminate = SIGTERM
    public static let interrupt = SIGINT
    public static let hangUp = SIGHUP
}
