import Glibc
import NimbusVocabulary

/// Replacing a file by a new version written beside it, for applications (NimbusClient's
/// coordinated writes): create the empty temporary, then flush it, rename it over the target
/// and flush the folder, so a crash leaves the old or the new file, never a torn one.
public enum AtomicReplacement {
    /// Creates `path` empty and exclusively, with the mode of `target` (0644 when there is
    /// none), not narrowed by the umask. The corresponding C function is `open(O_EXCL)`.
    public static func createEmpty(at path: String, modeLike target: String) throws {
        let here = FileDescriptor(rawValue: AT_FDCWD)
        let mode = (try? here.metadataFollowingLinks(of: SystemPath(target)).mode) ?? 0o644
        do {
            let fd = try FileDescriptor.open(SystemPath(path), [.writeOnly, .create, .exclusive], permissions: mode)
            try fd.closeAfter { try fd.setPermissions(mode) }
        } catch let error as Errno {
            throw error.at("create", path)
        }
    }

    /// fsync `temporary`, rename it over `target`, fsync the folder.
    public static func install(_ temporary: String, over target: String) throws {
        do {
            let fd = try FileDescriptor.open(SystemPath(temporary))
            try fd.closeAfter { try fd.sync() }
        } catch let error as Errno {
            throw error.at("fsync", temporary)
        }
        do {
            try FileDescriptor(rawValue: AT_FDCWD).rename(SystemPath(temporary), to: SystemPath(target))
        } catch let error as Errno {
            throw error.at("rename", target)
        }
        if let folder = try? FileDescriptor.open(SystemPath(target).parent, .directory) {
            folder.closeAfter { try? folder.sync() }
        }
    }

    /// Removes a temporary file that will not be installed.
    public static func discard(_ path: String) {
        try? FileDescriptor(rawValue: AT_FDCWD).removeFile(SystemPath(path))
    }
}

extension ProcessSupport {
    public enum ProgramCheck: Sendable { case missing, notExecutable, executable }

    /// Whether `path` exists and is a regular file this process may execute.
    /// The corresponding C functions are `stat` and `access`.
    public static func programCheck(_ path: String) -> ProgramCheck {
        guard (try? Sys.access(SystemPath(path), F_OK)) != nil else { return .missing }
        guard let info = try? Sys.fstatat(AT_FDCWD, SystemPath(path), 0), info.st_mode & S_IFMT == S_IFREG,
              (try? Sys.access(SystemPath(path), X_OK)) != nil else { return .notExecutable }
        return .executable
    }
}
