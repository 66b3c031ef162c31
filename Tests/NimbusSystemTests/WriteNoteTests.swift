import Testing
import NimbusVocabulary
@testable import NimbusSystem

/// The "served" note: replaced whole, never flushed (issue 15: Foundation's atomic write
/// flushed it, a filesystem commit at every start for a note a crash may take along).
@Suite struct WriteNoteTests {
    @Test func aNoteIsReplacedWholeWithoutAFlushAndLeavesNoTemporaryFile() throws {
        try Scratch.with { scratch in
            let note = scratch.path.appending("served-1-2").description
            var flushes = 0
            let faults = SyscallFaults(afterSync: { _ in flushes += 1 })
            try faults.inject {
                try ProcessSupport.writeNote("first\n", to: note)
                try ProcessSupport.writeNote("12\n/run/nimbus.sock\n", to: note)
            }
            #expect(try ProcessSupport.readFileIfExists(note) == Array("12\n/run/nimbus.sock\n".utf8))
            #expect(flushes == 0)
            #expect(try scratch.names(in: ".") == [Array("served-1-2".utf8)])
        }
    }

    @Test func aNoteThatCannotBeWrittenSaysWhere() throws {
        try Scratch.with { scratch in
            let note = scratch.path.appending("missing/served").description
            #expect(throws: Errno.noSuchFile.at("write", note)) { try ProcessSupport.writeNote("x", to: note) }
        }
    }
}
