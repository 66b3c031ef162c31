import Dispatch
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

    /// Hands memory freed after a large pass back to the system. glibc keeps freed heap
    /// pages for reuse, so without this the resident size stays at the peak of the biggest
    /// pass ever made; the code the pass ran stays mapped too (`ExecutablePages`). The
    /// corresponding C function is `malloc_trim`.
    public static func returnFreeMemory() {
        ExecutablePages.release()
        _ = CNimbus.malloc_trim(0)
    }

    /// Delivers `signals` to `handler` on `queue` instead of their default action.
    /// Keep the returned sources alive for as long as the handling should last.
    public static func handleSignals(_ signals: [Int32], on queue: DispatchQueue,
                                     _ handler: @escaping @Sendable (Int32) -> Void) -> [any DispatchSourceSignal] {
        // A launcher may have left these blocked (the mask is inherited): unblock them, or
        // they would stay pending for ever.
        var set = sigset_t()
        sigemptyset(&set)
        for number in signals { sigaddset(&set, number) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        return signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }

    public static let terminate = SIGTERM
    public static let interrupt = SIGINT
    public static let hangUp = SIGHUP
}
