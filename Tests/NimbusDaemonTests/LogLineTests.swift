@testable import NimbusDaemon
import Testing

/// A log line is one line whatever a file name in it holds. Under systemd each line of stderr
/// is a journal entry with the priority it starts with, so a cloud file named
/// `x\n<0>disk failure` made nimbusd log an emergency (which journald sends to every terminal).
struct LogLineTests {
    let name = "x\n<0>nimbusd: disk failure, call root\u{1B}]0;owned\u{07}"

    @Test(arguments: [false, true])
    func aFileNameCannotStartALineOfItsOwn(journald: Bool) {
        let logger = Logger(threshold: .debug, journald: journald)
        let line = logger.line(.warning, "cannot read \(name) in the local folder")
        #expect(line.filter { $0 == "\n" }.count == 1 && line.hasSuffix("\n"), "not one line: \(line.debugDescription)")
        #expect(!line.unicodeScalars.dropLast().contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) },
                "control characters reach the log: \(line.debugDescription)")
        #expect(line.contains("x\\x0A<0>nimbusd: disk failure, call root\\x1B]0;owned\\x07"), "\(line)")
        #expect(line.hasPrefix(journald ? "<4>cannot read " : "nimbusd: warning: cannot read "), "\(line)")
    }

    @Test func anOrdinaryMessageIsWrittenAsItIs() {
        #expect(Logger(threshold: .info, journald: false).line(.info, "synced café/ä.txt") == "nimbusd: synced café/ä.txt\n")
        #expect(Logger(threshold: .info, journald: true).line(.error, "disk full") == "<3>disk full\n")
    }
}
