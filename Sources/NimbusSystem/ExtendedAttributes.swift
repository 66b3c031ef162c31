import Glibc
import NimbusVocabulary

/// Extended attributes of an entry of an open directory, without opening the entry.
///
/// Opening a file to read its attributes would wake anyone watching it with `IN_OPEN` (the
/// daemon downloads a placeholder when it is opened, DESIGN §5), could block on a FIFO and has
/// side effects on devices. Linux has no `getxattrat` before 6.13, so the entry is named
/// as `/proc/self/fd/<directory>/<name>`: the kernel resolves the directory descriptor itself
/// (no path is re-walked, nothing can be swapped in) and the `l` calls do not follow a final
/// symlink. This needs `/proc`, which every Linux system running the daemon has.
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
            while true {
                do {
                    let count = try value.withUnsafeMutableBytes { try Sys.lgetxattr(path, name, into: $0) }
                    return Array(value[..<count])
                } catch let error as Errno where error == .resultTooLarge {
                    let size = try Sys.lgetxattr(path, name, into: UnsafeMutableRawBufferPointer(start: nil, count: 0))
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
        let path = procPath(of: entry)
        do {
            try value.withUnsafeBytes { try Sys.lsetxattr(path, name, $0) }
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
