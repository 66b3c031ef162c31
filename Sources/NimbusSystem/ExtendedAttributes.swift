import Glibc
import NimbusVocabulary
import Synchronization

/// Extended attributes of an entry of an open directory, without opening the entry.
///
/// Opening a file to read its attributes would wake anyone watching it with `IN_OPEN` (the
/// daemon downloads a placeholder when it is opened, DESIGN §5), could block on a FIFO and has
/// side effects on devices. Since Linux 6.13, `getxattrat`/`setxattrat` name the entry by the
/// directory's descriptor and its name. Before, the entry is named as
/// `/proc/self/fd/<directory>/<name>`: the kernel resolves the directory descriptor itself
/// (no path is re-walked, nothing can be swapped in) and the `l` calls do not follow a final
/// symlink. This needs `/proc`, which every Linux system running the daemon has, and costs a
/// walk through it on every call (a fifth of installing an upload in a first sync, issue 15).
///
/// On symlinks and special files the kernel keeps no `user.*` attributes: reading finds
/// none, writing fails with `EOPNOTSUPP`.
extension FileDescriptor {
    /// The value of attribute `name` of `entry`, or nil when it has none.
    /// The corresponding C function is `lgetxattr`.
    public func extendedAttribute(_ name: String, of entry: SystemPath) throws -> [UInt8]? {
        let path = procPath(of: entry)
        do {
            // Most values (states, sizes) are short: one call, and a second only for long ones.
            var value = [UInt8](repeating: 0, count: 256)
            let read = { (buffer: UnsafeMutableRawBufferPointer) throws -> Int in
                try XattrAtCalls.shared.run({ try Sys.getxattrat(rawValue, entry, name, into: buffer) },
                                     else: { try Sys.lgetxattr(path, name, into: buffer) })
            }
            while true {
                do {
                    let count = try value.withUnsafeMutableBytes { try read($0) }
                    return Array(value[..<count])
                } catch let error as Errno where error == .resultTooLarge {
                    let size = try read(UnsafeMutableRawBufferPointer(start: nil, count: 0))
                    value = [UInt8](repeating: 0, count: size)
                }
            }
        } catch let error as Errno where error == .noData {
            return nil
        }
    }

    /// Sets attribute `name` of `entry` to `value`, creating or replacing it.
    /// The corresponding C function is `lsetxattr`.
    public func setExtendedAttribute(_ name: String, of entry: SystemPath, to value: [UInt8]) throws {
        do {
            try value.withUnsafeBytes { bytes in
                try XattrAtCalls.shared.run({ try Sys.setxattrat(rawValue, entry, name, bytes) },
                                     else: { try Sys.lsetxattr(procPath(of: entry), name, bytes) })
            }
        } catch let error as Errno where error == .notPermitted {
            throw try explained(error, for: entry)
        }
    }

    /// Removes attribute `name` of `entry`; removing an attribute that is not there is not an
    /// error, so a retried removal succeeds. The corresponding C function is `lremovexattr`.
    public func removeExtendedAttribute(_ name: String, of entry: SystemPath) throws {
        do {
            try Sys.lremovexattr(procPath(of: entry), name)
        } catch let error as Errno where error == .noData {
            return
        } catch let error as Errno where error == .notPermitted {
            throw try explained(error, for: entry)
        }
    }

    private func procPath(of entry: SystemPath) -> SystemPath {
        SystemPath(bytes: Array("/proc/self/fd/\(rawValue)/".utf8) + entry.bytes)
    }

    /// The kernel answers `EPERM` for `user.*` attributes on symlinks and special files;
    /// `EOPNOTSUPP` says what is going on.
    private func explained(_ error: Errno, for entry: SystemPath) throws -> Errno {
        let kind = try metadata(of: entry).kind
        return kind == .symlink || kind == .special ? .notSupported : error
    }
}

/// Whether this kernel answers `getxattrat`/`setxattrat` (Linux 6.13): not known until the
/// first call, then remembered (`shared`: for the process).
final class XattrAtCalls: Sendable {
    static let shared = XattrAtCalls()
    private static let unknown: UInt8 = 0, available: UInt8 = 1, unavailable: UInt8 = 2
    private let state = Atomic<UInt8>(unknown)

    /// False once the kernel said it has not the `at` calls.
    var areUsed: Bool { state.load(ordering: .relaxed) != Self.unavailable }

    /// Runs `atCall` where the kernel has it, else `procCall` (the same call through /proc).
    /// ENOSYS says the kernel has not. EPERM may come from a seccomp filter that does not know
    /// the call (systemd's `SystemCallErrorNumber=EPERM`) as well as from the file: until an
    /// `at` call has worked, `procCall` is asked too, and when it succeeds the `at` calls are
    /// not used again.
    func run<R>(_ atCall: () throws -> R, else procCall: () throws -> R) throws -> R {
        let known = state.load(ordering: .relaxed)
        guard known != Self.unavailable else { return try procCall() }
        do {
            let result = try atCall()
            if known == Self.unknown { state.store(Self.available, ordering: .relaxed) }
            return result
        } catch let error as Errno where error == .notImplemented {
            state.store(Self.unavailable, ordering: .relaxed)
            return try procCall()
        } catch let error as Errno where error == .notPermitted && known == Self.unknown {
            let result = try procCall()
            state.store(Self.unavailable, ordering: .relaxed)
            return result
        }
    }
}
