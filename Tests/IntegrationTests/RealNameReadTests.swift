import Foundation
import Glibc
import NimbusTestTraits
import Testing

/// Issue 16 through the real daemon: the programs people read files with get the cloud's
/// bytes from a not-downloaded real-name placeholder of 4 KiB and of 50 MB, on ext4 (the
/// filesystem of /var/tmp) and on xfs and btrfs images where their mkfs is installed.
@Suite(.serialized, .onAThreadOfItsOwn(timeLimit: .minutes(10)),
       .enabled(if: RealNameSupport.skipReason == nil, Comment(rawValue: RealNameSupport.skipReason ?? "")))
struct RealNameReadTests {

    /// A program reading a file, as a shell script: `$1` is the file, `$2` where its bytes go
    /// (or, with `digest`, its md5 sum).
    struct Reader: Sendable {
        var name: String
        var script: String
        var digest = false
    }

    static let readers: [Reader] = [
        Reader(name: "cat", script: #"cat "$1" > "$2""#),
        Reader(name: "head", script: #"head -c 1000000000 "$1" > "$2""#),
        Reader(name: "cp", script: #"cp "$1" "$2""#),
        Reader(name: "dd", script: #"dd if="$1" of="$2" bs=1M status=none"#),
        Reader(name: "md5sum", script: #"md5sum < "$1" | cut -c1-32 > "$2""#, digest: true),
        Reader(name: "rsync", script: #"rsync "$1" "$2""#),
        Reader(name: "python-shutil", script: #"python3 -c 'import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])' "$1" "$2""#),
        // tar warns "file changed as we read it" if content arrives while it reads; checked below.
        Reader(name: "tar", script: #"tar -C "$(dirname "$1")" -cf - "$(basename "$1")" | tar -xOf - > "$2""#),
        Reader(name: "mmap", script: """
            python3 -c 'import mmap, sys
            with open(sys.argv[1], "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m, open(sys.argv[2], "wb") as out:
                out.write(m[:])' "$1" "$2"
            """),
    ]

    static let sizes: [(label: String, bytes: Int)] = [("4k", 4096), ("50m", 50 << 20)]

    /// Where the local folder is: the filesystem of /var/tmp, or an image of xfs or btrfs.
    enum Local: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case varTmp = "the filesystem of /var/tmp"
        case xfs, btrfs
        var testDescription: String { rawValue }
        var image: String? { self == .varTmp ? nil : rawValue }
    }

    @Test("cat, head, cp, dd, md5sum, rsync, shutil.copyfile, tar and mmap read the cloud's bytes from not-downloaded files",
          arguments: Local.allCases)
    func everyProgramReadsTheRightBytes(_ local: Local) async throws {
        if let image = local.image, let problem = RealName.imageProblem(image) {
            print("[realNameReads] SKIPPED on \(image), not run: \(problem)")
            return
        }
        let s = try RealName.sandbox("realNameReads-\(local.image ?? "var-tmp")", image: local.image)
        defer { s.finish() }
        let d = s.daemon
        let readers = Self.readers.filter { $0.name != "rsync" || FileManager.default.isExecutableFile(atPath: SyncHarness.tool("rsync")) }
        if readers.count < Self.readers.count { print("[realNameReads] rsync is not installed: not run with rsync") }
        var files: [String] = []
        for (index, reader) in readers.enumerated() {
            for size in Self.sizes {
                let name = "\(reader.name)-\(size.label).bin"
                if size.bytes >= 1 << 20 {
                    try PlaceholderFiles.writeBig(d.cloud + "/" + name, megabytes: size.bytes >> 20, seed: UInt64(index + 1))
                } else {
                    try PlaceholderFiles.write(d.cloud + "/" + name, RealName.content(size.bytes, seed: UInt64(index + 100)))
                }
                files.append(name)
            }
        }
        try await d.start()
        try await d.eventually("real-name placeholders for every cloud file", timeout: .seconds(60)) {
            files.lazy.compactMap { RealName.isNotDownloaded(d, $0) }.first
        }
        let output = try s.sandbox.folder("out")
        for reader in readers {
            for size in Self.sizes {
                let name = "\(reader.name)-\(size.label).bin"
                let out = output + "/" + name
                let run = RealName.shell(reader.script, [d.local + "/" + name, out])
                #expect(run.status == 0, "\(reader.name) of the not-downloaded \(name) failed: \(run.output)")
                #expect(!run.output.contains("changed as we read"), "\(reader.name) of \(name): \(run.output)")
                if reader.digest {
                    let expected = RealName.shell(#"md5sum < "$1" | cut -c1-32"#, [d.cloud + "/" + name]).output
                    #expect(PlaceholderFiles.text(out) == expected, "\(reader.name) of \(name): \(PlaceholderFiles.text(out) ?? "nothing"), the cloud copy's is \(expected)")
                } else {
                    #expect(PlaceholderFiles.same(out, d.cloud + "/" + name), "\(reader.name) of the not-downloaded \(name) did not get the cloud's bytes")
                }
                #expect(RealName.isDownloaded(d, name) == nil, "after \(reader.name): \(RealName.isDownloaded(d, name) ?? "")")
            }
        }
        try await d.stop()
    }
}
