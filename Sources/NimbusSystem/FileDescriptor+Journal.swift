import Glibc
import NimbusVocabulary

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
