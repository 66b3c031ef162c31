import Testing
import Glibc
import NimbusTestSupport

// File operations on byte paths (names need not be UTF-8) and tree snapshots, written directly
// on Glibc so that the tests check the daemon with code independent of the daemon's own.

enum SyncFiles {
    static func join(_ root: String, _ relative: [UInt8]) -> [UInt8] { Array(root.utf8) + [UInt8(ascii: "/")] + relative }
    static func join(_ root: String, _ relative: String) -> [UInt8] { join(root, Array(relative.utf8)) }

    /// A path for messages: bytes that are not printable ASCII are shown as \xNN.
    static func shown(_ path: [UInt8]) -> String {
        path.map { (32..<127).contains($0) && $0 != UInt8(ascii: "\\") ? String(UnicodeScalar($0)) : "\\x" + hex($0) }.joined()
    }

    static func hex(_ byte: UInt8) -> String { (byte < 16 ? "0" : "") + String(byte, radix: 16) }

    static func call<R>(_ what: String, _ path: [UInt8], _ body: (UnsafePointer<CChar>) -> R) -> R {
        let c = path.map { CChar(bitPattern: $0) } + [0]
        return c.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    static func check(_ result: Int32, _ what: String, _ path: [UInt8]) throws {
        if result < 0 { throw HarnessFailure("\(what) \(shown(path)): \(String(cString: strerror(errno)))") }
    }

    /// Creates or truncates `path` and writes `bytes` in one go, then closes it.
    static func write(_ path: [UInt8], _ bytes: [UInt8], mode: mode_t = 0o644) throws {
        let fd = call("open", path) { open($0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode) }
        try check(fd, "open", path)
        defer { close(fd) }
        try writeAll(fd, bytes, path)
    }

    static func append(_ path: [UInt8], _ bytes: [UInt8]) throws {
        let fd = call("open", path) { open($0, O_WRONLY | O_APPEND | O_CLOEXEC) }
        try check(fd, "open", path)
        defer { close(fd) }
        try writeAll(fd, bytes, path)
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8], _ path: [UInt8]) throws {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, bytes.count - done) }
            if n < 0 && errno == EINTR { continue }
            try check(Int32(n < 0 ? -1 : 0), "write", path)
            done += n
        }
    }

    /// The whole file, or nil when it does not exist.
    static func read(_ path: [UInt8]) throws -> [UInt8]? {
        let fd = call("open", path) { open($0, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        if fd < 0 && errno == ENOENT { return nil }
        try check(fd, "open", path)
        defer { close(fd) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            try check(Int32(n < 0 ? -1 : 0), "read", path)
            if n == 0 { return result }
            result += buffer[..<n]
        }
    }

    static func text(_ path: [UInt8]) throws -> String? { try read(path).map { String(decoding: $0, as: UTF8.self) } }

    /// lstat, or nil when nothing is there.
    static func status(_ path: [UInt8]) throws -> stat? {
        var s = stat()
        let result = call("lstat", path) { lstat($0, &s) }
        if result < 0 && (errno == ENOENT || errno == ENOTDIR) { return nil }
        try check(result, "lstat", path)
        return s
    }

    static func exists(_ path: [UInt8]) -> Bool { ((try? status(path)) ?? nil) != nil }

    static func rename(_ from: [UInt8], _ to: [UInt8]) throws {
        let t = to.map { CChar(bitPattern: $0) } + [0]
        try check(call("rename", from) { f in t.withUnsafeBufferPointer { Glibc.rename(f, $0.baseAddress!) } }, "rename", from)
    }

    static func remove(_ path: [UInt8]) throws { try check(call("unlink", path) { unlink($0) }, "unlink", path) }
    static func removeDirectory(_ path: [UInt8]) throws { try check(call("rmdir", path) { rmdir($0) }, "rmdir", path) }
    static func makeDirectory(_ path: [UInt8], mode: mode_t = 0o755) throws {
        try check(call("mkdir", path) { mkdir($0, mode) }, "mkdir", path)
        try setMode(path, mode)  // without the umask
    }
    static func setMode(_ path: [UInt8], _ mode: mode_t) throws { try check(call("chmod", path) { chmod($0, mode) }, "chmod", path) }

    static func makeSymlink(_ path: [UInt8], to target: String) throws {
        try check(call("symlink", path) { p in target.withCString { symlink($0, p) } }, "symlink", path)
    }

    static func readSymlink(_ path: [UInt8]) throws -> [UInt8] {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = call("readlink", path) { readlink($0, &buffer, buffer.count) }
        try check(Int32(n < 0 ? -1 : 0), "readlink", path)
        return buffer[..<n].map { UInt8(bitPattern: $0) }
    }

    /// The names in a directory (without . and ..).
    static func names(in directory: [UInt8]) throws -> [[UInt8]] {
        guard let dir = call("opendir", directory, { opendir($0) }) else {
            try check(-1, "opendir", directory)
            return []
        }
        defer { closedir(dir) }
        var names: [[UInt8]] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: &entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            if name == [46] || name == [46, 46] { continue }
            names.append(name)
        }
        return names
    }

    static func names(in directory: String) throws -> [String] {
        try names(in: Array(directory.utf8)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Where the local folder keeps files a sync deleted, for the mass-delete guard's window
    /// (45 s): Nimbus's own, not a leftover (`SyncEngine+KeptDeletions`).
    static let deletedHolding = Array(".nimbus-tmp-deleted".utf8)

    /// Every path (relative, depth first) below `root` whose name starts with `.nimbus-tmp-`,
    /// including inside `.nimbus/`, except the holding folder of deleted files.
    static func temporaryFiles(in root: String) throws -> [String] {
        var found: [String] = []
        func walk(_ relative: [UInt8]) throws {
            let directory = relative.isEmpty ? Array(root.utf8) : join(root, relative)
            for name in try names(in: directory) where !(relative.isEmpty && name == deletedHolding) {
                let path = relative.isEmpty ? name : relative + [UInt8(ascii: "/")] + name
                if name.starts(with: Array(".nimbus-tmp-".utf8)) { found.append(shown(path)) }
                if let s = try status(join(root, path)), s.st_mode & S_IFMT == S_IFDIR { try walk(path) }
            }
        }
        try walk([])
        return found
    }
}

/// What a folder holds, for comparisons: kind, mode, content (or size and mtime for big files),
/// nanosecond mtime of files, symlink targets. Nimbus's own markers and holding folder at the
/// top are left out.
struct SyncTree: Equatable {
    enum Entry: Equatable, CustomStringConvertible {
        case directory(mode: UInt32)
        case file(mode: UInt32, size: Int64, mtime: Int64, content: [UInt8]?)
        case symlink(target: [UInt8])
        case special(mode: UInt32)

        var description: String {
            switch self {
            case .directory(let mode): "directory \(String(mode, radix: 8))"
            case .file(let mode, let size, let mtime, let content):
                "file \(String(mode, radix: 8)) size \(size) mtime \(mtime)"
                    + (content.map { $0.count <= 40 ? " \"\(SyncFiles.shown($0))\"" : "" } ?? " (content not read)")
            case .symlink(let target): "symlink -> \(SyncFiles.shown(target))"
            case .special(let mode): "special \(String(mode, radix: 8))"
            }
        }

        var isFile: Bool { if case .file = self { true } else { false } }
        var content: [UInt8]? { if case .file(_, _, _, let content) = self { content } else { nil } }
    }

    var entries: [[UInt8]: Entry] = [:]

    /// Scans `root`; files larger than `contentLimit` are compared by size and mtime only.
    init(scanning root: String, contentLimit: Int = 4 << 20, includeNimbusOwn: Bool = false) throws {
        func walk(_ relative: [UInt8]) throws {
            let directory = relative.isEmpty ? Array(root.utf8) : SyncFiles.join(root, relative)
            for name in try SyncFiles.names(in: directory) {
                if relative.isEmpty && !includeNimbusOwn
                    && (name == Array(".nimbus".utf8) || name == Array(".nimbus-root".utf8) || name == SyncFiles.deletedHolding) {
                    continue
                }
                let path = relative.isEmpty ? name : relative + [UInt8(ascii: "/")] + name
                let full = SyncFiles.join(root, path)
                guard let s = try SyncFiles.status(full) else { continue }  // gone meanwhile
                let mode = UInt32(s.st_mode) & 0o7777
                switch s.st_mode & S_IFMT {
                case S_IFDIR:
                    entries[path] = .directory(mode: mode)
                    try walk(path)
                case S_IFREG:
                    let content = s.st_size <= contentLimit ? try SyncFiles.read(full) : nil
                    entries[path] = .file(mode: mode, size: Int64(s.st_size),
                                          mtime: Int64(s.st_mtim.tv_sec) * 1_000_000_000 + Int64(s.st_mtim.tv_nsec), content: content)
                case S_IFLNK:
                    entries[path] = .symlink(target: try SyncFiles.readSymlink(full))
                default:
                    entries[path] = .special(mode: UInt32(s.st_mode))
                }
            }
        }
        try walk([])
    }

    subscript(path: String) -> Entry? { entries[Array(path.utf8)] }

    var fileCount: Int { entries.values.count { $0.isFile } }

    /// nil when equal, else the first differences, one per line.
    func differences(from other: SyncTree, names: (String, String), limit: Int = 12) -> String? {
        var lines: [String] = []
        for path in Set(entries.keys).union(other.entries.keys).sorted(by: { $0.lexicographicallyPrecedes($1) })
        where entries[path] != other.entries[path] {
            lines.append("\(SyncFiles.shown(path)): \(entries[path]?.description ?? "absent") in \(names.0), "
                + "\(other.entries[path]?.description ?? "absent") in \(names.1)")
        }
        guard !lines.isEmpty else { return nil }
        return "\(lines.count) difference(s):\n  " + lines.prefix(limit).joined(separator: "\n  ")
    }
}

extension SyncFiles {
    static func inode(_ path: [UInt8]) throws -> UInt64? { try status(path).map { UInt64($0.st_ino) } }
}
