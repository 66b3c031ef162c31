import Foundation
import NimbusSystem
import NimbusVocabulary

/// The bench's temporary folder, removed at the end (unless `--keep`).
final class Workspace {
    let root: String
    private var sources: [Int: String] = [:]
    private var counter = 0

    init(base: String) throws {
        let name = "nimbus-bench-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0 ... .max))"
        root = (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/" + name
        try makeDirectories(SystemPath(root), permissions: 0o700)
    }

    /// A new, not yet existing path in the workspace: `root/label-N`.
    func fresh(_ label: String) -> String {
        counter += 1
        return "\(root)/\(label)-\(counter)"
    }

    /// A new empty directory.
    func freshDirectory(_ label: String) throws -> String {
        let path = fresh(label)
        try makeDirectories(SystemPath(path))
        return path
    }

    /// The shared source tree of `files` files of 4 KiB, 100 per folder, made once.
    func sourceTree(files: Int) throws -> String {
        if let path = sources[files] { return path }
        let path = "\(root)/src-\(files)"
        let seconds = try Monotonic.seconds { try TreeMaker.make(at: path, files: files) }
        progress("made a tree of \(files) files of 4 KiB in \(format(seconds)) s")
        sources[files] = path
        return path
    }

    func remove() { Shell.remove(root) }
}

/// Trees of small files as the issues describe them: `d0000/f000` …, 100 files per folder,
/// each 4 KiB of distinct content (so no two files hash alike).
enum TreeMaker {
    static let fileSize = 4096

    static func folderName(_ folder: Int) -> String { "d" + pad(folder, 4) }
    static func fileName(_ index: Int) -> String { "f" + pad(index, 3) }

    static func relativePaths(files: Int, perFolder: Int = 100, under prefix: String = "") -> [String] {
        (0..<files).map { index in prefix + folderName(index / perFolder) + "/" + fileName(index % perFolder) }
    }

    /// Writes the tree below `root` (created); returns the relative paths written.
    @discardableResult
    static func make(at root: String, files: Int, perFolder: Int = 100, under prefix: String = "",
                     seed: UInt64 = 0x9E37_79B9_7F4A_7C15) throws -> [String] {
        var content = Content(seed: seed ^ UInt64(files))
        let rootFolder = root + "/" + prefix
        try makeDirectories(SystemPath(rootFolder))
        var directory: FileDescriptor?
        defer { try? directory?.close() }
        for index in 0..<files {
            if index % perFolder == 0 {
                try? directory?.close()
                let folder = rootFolder + folderName(index / perFolder)
                try makeDirectories(SystemPath(folder))
                directory = try FileDescriptor.open(SystemPath(folder), .directory)
            }
            try write(SystemPath(fileName(index % perFolder)), in: directory!, content.next(size: fileSize))
        }
        return relativePaths(files: files, perFolder: perFolder, under: prefix)
    }

    static func write(_ name: SystemPath, in directory: FileDescriptor?, _ bytes: [UInt8]) throws {
        let file = try FileDescriptor.open(name, [.writeOnly, .create, .truncate], permissions: 0o644, relativeTo: directory)
        try file.closeAfter { try file.writeAll(bytes) }
    }

    /// The files below `root` as (relative path → size), skipping `.nimbus`.
    static func files(in root: String, under directory: String = "") throws -> [String: Int64] {
        let system = DiskFileSystem(root: SystemPath(root))
        let start = directory.isEmpty ? RelativePath.root : try RelativePath(validating: directory)
        let scan = try system.scan(start) { $0.bytes != Array(".nimbus".utf8) }
        var result: [String: Int64] = [:]
        result.reserveCapacity(scan.entries.count)
        for entry in scan.entries where entry.metadata.kind == .file {
            result[entry.path.description] = entry.metadata.size  // relative to the root
        }
        return result
    }

    /// How many of `expected` are missing below `root` or not 4 KiB; nil when all arrived.
    static func missing(_ expected: [String], in root: String, under directory: String = "") throws -> String? {
        let found = try files(in: root, under: directory)
        let absent = expected.filter { found[$0] == nil }
        let wrong = expected.filter { found[$0] != nil && found[$0] != Int64(fileSize) }
        if absent.isEmpty && wrong.isEmpty { return nil }
        return "\(absent.count) of \(expected.count) files missing (e.g. \(absent.prefix(3).joined(separator: ", "))), "
            + "\(wrong.count) with the wrong size"
    }

    /// Inode of every file below `root` (to show that nothing was copied again).
    static func inodes(in root: String) throws -> [RelativePath: UInt64] {
        let scan = try DiskFileSystem(root: SystemPath(root)).scan(.root) { $0.bytes != Array(".nimbus".utf8) }
        var result: [RelativePath: UInt64] = [:]
        for entry in scan.entries where entry.metadata.kind == .file { result[entry.path] = entry.metadata.inode }
        return result
    }

    private static func pad(_ number: Int, _ width: Int) -> String {
        let text = String(number)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}

/// Pseudo-random file content (xorshift), cheap to make, different for every file.
struct Content {
    private var state: UInt64
    private var counter: UInt64 = 0

    init(seed: UInt64) { state = seed == 0 ? 1 : seed }

    mutating func next(size: Int) -> [UInt8] {
        counter += 1
        var bytes = [UInt8](repeating: 0, count: size)
        bytes.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for index in words.indices {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                words[index] = state
            }
            if words.count > 0 { words[0] = counter }
        }
        return bytes
    }
}

/// What the report header says about the machine.
enum Machine {
    static func describe(benchDirectory: String) -> [(String, String)] {
        let info = ProcessInfo.processInfo
        var facts: [(String, String)] = []
        facts.append(("cores (nproc)", "\(info.activeProcessorCount)"))
        facts.append(("memory", "\(info.physicalMemory >> 20) MiB"))
        if let model = firstLine(of: "/proc/cpuinfo", prefix: "model name") {
            facts.append(("cpu", model.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? model))
        }
        let df = Shell.run(Shell.which("df") ?? "/bin/df", ["--output=fstype,source,avail", "-h", benchDirectory])
        let mount = df.output.split(separator: "\n").last.map { $0.split(separator: " ").joined(separator: " ") } ?? "?"
        facts.append(("bench dir", "\(benchDirectory) (\(mount) free)"))
        facts.append(("kernel", info.operatingSystemVersionString))
        if let load = try? ProcessSupport.readFileIfExists("/proc/loadavg") {
            facts.append(("load at start", String(decoding: load, as: UTF8.self).split(separator: " ").prefix(3).joined(separator: " ")))
        }
        return facts
    }

    static func firstLine(of path: String, prefix: String) -> String? {
        guard let bytes = try? ProcessSupport.readFileIfExists(path, limit: 1 << 22) else { return nil }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(prefix) }.map(String.init)
    }
}

/// The size of a file; 0 when it cannot be opened.
func fileSize(_ path: String) -> Int64 {
    guard let file = try? FileDescriptor.open(SystemPath(path)) else { return 0 }
    return file.closeAfter { (try? file.metadata().size) ?? 0 }
}

/// Progress goes to stderr, so stdout holds only the report.
func progress(_ message: String) {
    FileHandle.standardError.write(Data("[bench] \(message)\n".utf8))
}
