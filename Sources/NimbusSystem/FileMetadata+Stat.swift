import Glibc
import NimbusVocabulary

extension FileMetadata {
    /// What `lstat` filled in, in the engine's terms.
    init(_ st: stat, symlinkTarget: [UInt8]? = nil) {
        let kind: FileKind = switch st.st_mode & S_IFMT {
        case S_IFREG: .file
        case S_IFDIR: .directory
        case S_IFLNK: .symlink
        default: .special
        }
        self.init(kind: kind, size: Int64(st.st_size),
                  mtime: st.st_mtim.nanoseconds,
                  mode: UInt32(st.st_mode & 0o7777), inode: UInt64(st.st_ino), device: UInt64(st.st_dev),
                  symlinkTarget: symlinkTarget)
    }
}

// The kernel's times (timespec) meet the engine's nanosecond counts here and only here.
extension timespec {
    /// Nanoseconds since the clock's origin (the epoch for file times).
    var nanoseconds: Int64 { Int64(tv_sec) * Duration.nanosecondsPerSecond + Int64(tv_nsec) }

    /// The kernel wants `tv_nsec` in 0..<1 000 000 000 also before 1970: -0.5 s is the second
    /// -1 plus 0.5 s (a negative `tv_nsec` is EINVAL).
    init(nanoseconds: Int64) {
        let perSecond = Duration.nanosecondsPerSecond
        let (seconds, fraction) = nanoseconds.quotientAndRemainder(dividingBy: perSecond)
        self.init(tv_sec: Int(fraction < 0 ? seconds - 1 : seconds), tv_nsec: Int(fraction < 0 ? fraction + perSecond : fraction))
    }
}
