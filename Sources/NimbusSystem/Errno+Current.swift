import Glibc
import NimbusVocabulary

extension Errno {
    /// The calling thread's `errno`.
    static var current: Errno { Errno(rawValue: errno) }
}
