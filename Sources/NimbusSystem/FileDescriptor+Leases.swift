import CNimbus
import Glibc

extension FileDescriptor {
    /// True when some process has this file open for writing. A read lease cannot be taken
    /// on such a file, so the probe takes one and gives it back at once; when leases are not
    /// possible here (not the owner, a network filesystem), it answers false.
    /// The corresponding C function is `fcntl(F_SETLEASE)`.
    func isOpenForWritingElsewhere() -> Bool { cnimbus_probe_read_lease(rawValue) == 0 }

    /// The file's content changed less than `window` ns ago (by the wall clock).
    func isRecentlyWritten(_ metadata: FileMetadata, within window: Int64) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec) - metadata.mtime < window
    }
}
