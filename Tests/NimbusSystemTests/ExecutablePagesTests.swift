import Testing
@testable import NimbusSystem

/// The daemon drops its mappings of its own code when it goes idle (issue 15): only mappings
/// of the executable whose pages are all clean copies of the file.
@Suite struct ExecutablePagesTests {
    static let program = "/usr/bin/nimbusd"

    /// One mapping as /proc/PID/smaps shows it (the fields that matter, in the kernel's order).
    func mapping(_ range: String, _ permissions: String, _ path: String, anonymous: Int = 0, swap: Int = 0) -> String {
        """
        \(range) \(permissions) 00000000 08:01 1234                       \(path)
        Size:               1024 kB
        Rss:                 512 kB
        Private_Clean:       512 kB
        Anonymous:      \(String(repeating: " ", count: 8))\(anonymous) kB
        AnonHugePages:         0 kB
        Swap:           \(String(repeating: " ", count: 8))\(swap) kB
        SwapPss:               0 kB
        Locked:                0 kB
        THPeligible:           0
        VmFlags: rd ex mr mw me dw

        """
    }

    @Test func onlyTheProgramsCleanReadOnlyMappingsAreReleasable() {
        let smaps = [
            mapping("1000-2000", "r--p", Self.program),                      // constants: yes
            mapping("2000-5000", "r-xp", Self.program),                      // code: yes
            mapping("5000-6000", "r--p", Self.program, anonymous: 8),        // relocated (RELRO): no
            mapping("6000-7000", "rw-p", Self.program, anonymous: 4),        // data: no
            mapping("7000-8000", "r-xp", Self.program, swap: 4),             // a private page swapped out: no
            mapping("8000-9000", "r-xp", Self.program, anonymous: 4),        // a breakpoint: no
            mapping("9000-a000", "r-xp", "/usr/lib/x86_64-linux-gnu/libc.so.6"),  // another file: no
            mapping("a000-b000", "r-xp", "/usr/bin/nimbusd-other"),          // not the same path: no
            mapping("b000-c000", "rw-p", "[heap]", anonymous: 4),
            mapping("c000-d000", "rw-p", "", anonymous: 4),
        ].joined()
        let found = ExecutablePages.releasable(smaps: Array(smaps.utf8), executable: Array(Self.program.utf8))
        #expect(found == [ExecutablePages.Mapping(start: 0x1000, end: 0x2000), ExecutablePages.Mapping(start: 0x2000, end: 0x5000)])
    }

    /// A program replaced on disk while it runs (an upgrade) is "PATH (deleted)" in both
    /// /proc/self/exe and smaps; a path with spaces is read to the end of the line.
    @Test func aPathWithSpacesOrAReplacedProgramIsMatchedWhole() {
        let path = "/opt/my tools/nimbusd (deleted)"
        let smaps = mapping("10-20", "r-xp", path) + mapping("20-30", "r-xp", "/opt/my tools/nimbusd")
        #expect(ExecutablePages.releasable(smaps: Array(smaps.utf8), executable: Array(path.utf8))
                == [ExecutablePages.Mapping(start: 0x10, end: 0x20)])
    }

    /// In this test process: its code is dropped from its resident set, and it goes on
    /// running (the kernel maps the pages again as they are needed).
    @Test func releasingThisProgramsCodeShrinksItsResidentCodeAndItKeepsRunning() throws {
        func residentCode() throws -> Int {
            let exe = try Sys.readlink("/proc/self/exe", capacity: 4096)
            let smaps = try #require(try ProcessSupport.readFileIfExists("/proc/self/smaps", limit: 64 << 20))
            let mappings = ExecutablePages.releasable(smaps: smaps, executable: exe)
            #expect(!mappings.isEmpty, "no clean read-only mapping of \(String(decoding: exe, as: UTF8.self)) in smaps")
            // The Rss of those mappings: the line after their header's Size.
            let text = String(decoding: smaps, as: UTF8.self)
            var resident = 0
            var inside = false
            for line in text.split(separator: "\n") {
                if let start = line.split(separator: "-").first.flatMap({ UInt($0, radix: 16) }), line.contains(" ") {
                    inside = mappings.contains { $0.start == start }
                } else if inside, line.hasPrefix("Rss:") {
                    resident += Int(line.split(separator: " ")[1]) ?? 0
                }
            }
            return resident
        }
        let before = try residentCode()
        let released = ExecutablePages.release()
        let after = try residentCode()
        #expect(released > 0 && after < before, "released \(released) bytes of mappings; resident code \(before) → \(after) KiB")
    }
}
