import Glibc

/// Free space as a test sees it, checked independently of the daemon's own `spaceInfo`.
public enum FreeSpace {
    /// Bytes an unprivileged writer may still use on the filesystem holding `path` (statvfs(3)
    /// f_bavail × f_frsize), or -1 when statvfs fails, which no comparison with a real size passes.
    public static func bytes(at path: String) -> Int64 {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { return -1 }
        return Int64(s.f_bavail) * Int64(s.f_frsize)
    }
}
