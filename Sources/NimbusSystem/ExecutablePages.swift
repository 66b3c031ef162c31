import NimbusVocabulary

/// This program's code, handed back to the kernel when the daemon goes idle (issue 15).
///
/// The kernel maps a program's code as it runs, 64 KiB around each page it needs, and leaves
/// it mapped: after its first sync nearly all of nimbusd's code (8.5 MiB) counts in its
/// resident size, although the idle daemon runs a few hundred KiB of it. `MADV_DONTNEED` on
/// the executable's read-only mappings drops our page-table entries, nothing else: the pages
/// stay in the page cache, and the next instruction or constant that needs one maps it again
/// (a minor fault; a read of the file if the kernel has reclaimed it meanwhile, as at start).
///
/// Dropping a page loses nothing only while it is a clean copy of the file. A read-only page
/// stops being one when the dynamic loader relocated it (RELRO) or a debugger wrote a
/// breakpoint into it: such a page is private, counted in `Anonymous` (or in `Swap` once
/// swapped out) in /proc/self/smaps, and a mapping holding one is left alone.
public enum ExecutablePages {
    /// One mapping, from `start` up to (not including) `end`.
    struct Mapping: Equatable {
        var start: UInt
        var end: UInt
    }

    /// Drops this process's mappings of its program's clean read-only pages. Returns how many
    /// bytes of mappings were dropped: 0 when /proc cannot be read, since this is an economy,
    /// never needed for correctness.
    @discardableResult
    public static func release() -> Int {
        guard let executable = try? Sys.readlink("/proc/self/exe", capacity: 4096),
              let smaps = try? ProcessSupport.readFileIfExists("/proc/self/smaps", limit: 64 << 20) else { return 0 }
        var released = 0
        for mapping in releasable(smaps: smaps, executable: executable) {
            let length = Int(mapping.end - mapping.start)
            if (try? Sys.dropMappedPages(start: mapping.start, length: length)) != nil { released += length }
        }
        return released
    }

    /// The mappings in `smaps` (the text of /proc/PID/smaps) of the file `executable` that are
    /// not writable and hold no private page (`Anonymous` and `Swap` both 0 kB).
    static func releasable(smaps: [UInt8], executable: [UInt8]) -> [Mapping] {
        var result: [Mapping] = []
        // The mapping being read, while it may still qualify, and which of its two counts
        // were seen at 0 kB.
        var candidate: (mapping: Mapping, cleanCounts: Int)?
        for line in smaps.split(separator: UInt8(ascii: "\n")) {
            if let header = Header(line) {
                candidate = header.path.elementsEqual(executable) && header.isReadOnly ? (header.mapping, 0) : nil
            } else if var current = candidate,
                      let field = ["Anonymous:", "Swap:"].first(where: { line.starts(with: $0.utf8) }) {
                guard kilobytes(line.dropFirst(field.utf8.count)) == 0 else {
                    candidate = nil
                    continue
                }
                current.cleanCounts += 1
                if current.cleanCounts == 2 {
                    result.append(current.mapping)
                    candidate = nil
                } else {
                    candidate = current
                }
            }
        }
        return result
    }

    /// "   12 kB" → 12; nil when it is not that.
    private static func kilobytes(_ text: ArraySlice<UInt8>) -> Int? {
        let fields = text.split(separator: UInt8(ascii: " "))
        guard fields.count == 2, fields[1].elementsEqual("kB".utf8) else { return nil }
        return Int(String(decoding: fields[0], as: UTF8.self))
    }

    /// A mapping's first line: `start-end perms offset dev inode [path]`.
    private struct Header {
        var mapping: Mapping
        var isReadOnly: Bool
        var path: ArraySlice<UInt8>

        init?(_ line: ArraySlice<UInt8>) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 2)
            guard fields.count >= 2 else { return nil }
            let bounds = fields[0].split(separator: UInt8(ascii: "-"))
            guard bounds.count == 2, let start = UInt(String(decoding: bounds[0], as: UTF8.self), radix: 16),
                  let end = UInt(String(decoding: bounds[1], as: UTF8.self), radix: 16), start < end else { return nil }
            let permissions = Array(fields[1])
            guard permissions.count == 4 else { return nil }
            mapping = Mapping(start: start, end: end)
            isReadOnly = permissions[0] == UInt8(ascii: "r") && permissions[1] == UInt8(ascii: "-")
            // A file's path is the rest of the line from its first "/" (nothing before it
            // has one); pseudo-mappings ("[heap]") and anonymous ones have none.
            let rest = fields.count > 2 ? fields[2] : []
            path = rest.firstIndex(of: UInt8(ascii: "/")).map { rest[$0...] } ?? []
        }
    }
}
