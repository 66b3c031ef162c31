import Glibc

extension Sys {
    static func lockFile(_ fd: Int32, _ operation: Int32) throws {
        // Unqualified on purpose: `Glibc.flock` resolves to the `struct flock` of fcntl(2).
        _ = try retrying { flock(fd, operation) }
    }
}

extension FileDescriptor {
    /// Takes an exclusive advisory lock (flock(2), non-blocking) held until the descriptor is
    /// closed. Returns false when another open file (another daemon on the same state
    /// directory) already holds it, so two writers can never interleave their appends.
    public func tryLockExclusive() throws -> Bool {
        do {
            try Sys.lockFile(rawValue, LOCK_EX | LOCK_NB)
            return true
        } catch let error as Errno where error == .wouldBlock {
            return false
        }
    }
}
