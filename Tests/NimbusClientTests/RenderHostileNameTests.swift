@testable import NimbusClient
import NimbusCore
import NimbusProtocol
import Testing

/// File names are bytes another device chose: a newline or an escape sequence in one must
/// reach the terminal as text, never as a line break or a command to the terminal (seen with
/// the real programs: `nimbusctl ls` printed `evil ESC[2J name` raw, clearing the screen, and
/// split `new\nline` over two rows). `--json` keeps the names exact.
struct RenderHostileNameTests {
    let plain = RenderContext(color: false, now: RenderTests.now)
    let colored = RenderContext(color: true, now: RenderTests.now)
    static let clearScreen = "evil\u{1B}[2Jname"
    static let newline = "new\nline"
    static let bell = "ring\u{07}\u{9B}31m"

    /// No control character but those of our own colours (`ESC [ digits m`) and our line breaks.
    func assertDisplaysOnly(_ text: String, lines: Int, _ what: String) {
        let controls = Self.withoutColours(text).unicodeScalars.filter { TerminalText.isControl($0) && $0 != "\n" }
        #expect(controls.isEmpty, "\(what) prints control characters \(controls.map { $0.value }): \(text.debugDescription)")
        #expect(text.split(separator: "\n", omittingEmptySubsequences: false).count == lines,
                "\(what) is not \(lines) line(s): \(text.debugDescription)")
    }

    /// `text` without the colour sequences nimbusctl writes (`ESC [`, digits and `;`, `m`),
    /// and nothing else: `stripEscapes` would also hide a name's `ESC [2J`.
    static func withoutColours(_ text: String) -> String {
        var result = "", pending = ""
        for scalar in text.unicodeScalars {
            if pending.isEmpty && scalar != "\u{1B}" { result.unicodeScalars.append(scalar); continue }
            pending.unicodeScalars.append(scalar)
            if pending == "\u{1B}" || pending == "\u{1B}[" || (pending.count > 2 && ("0"..."9").contains(scalar) || scalar == ";") { continue }
            if !(pending.count > 2 && scalar == "m") { result += pending }
            pending = ""
        }
        return result + pending
    }

    @Test func controlCharactersAreShownAsEscapes() {
        #expect(TerminalText.printable(Self.clearScreen) == "evil\\x1B[2Jname")
        #expect(TerminalText.printable(Self.newline) == "new\\x0Aline")
        #expect(TerminalText.printable(Self.bell) == "ring\\x07\\x9B31m")
        #expect(TerminalText.printable("café ☁ 日本\\x41") == "café ☁ 日本\\x41", "printable text is kept as it is")
    }

    @Test func aListingIsOneRowPerEntry() {
        let entries = [Self.clearScreen, Self.newline, Self.bell].map { name in
            Entry(path: WirePath(name), kind: "file", size: 1, mtimeNs: 0, state: .downloaded,
                  conflictCopy: WirePath(name + " (conflict)"), residency: "auto")
        }
        for context in [plain, colored] {
            assertDisplaysOnly(Render.entries(entries, base: "", context), lines: 3, "ls")
            assertDisplaysOnly(Render.info(entries[1], localPath: "/home/ann/Nimbus/" + Self.newline, placeholderFile: nil, context), lines: 8, "info")
        }
    }

    /// The line after download, evict, pin and unpin names the file (seen: `nimbusctl evict`
    /// of `nl\nname` printed "Evicted nl", then "name." on a line of its own).
    @Test func whatACommandDidNamesTheFileAsText() {
        for name in [Self.clearScreen, Self.newline, Self.bell] {
            assertDisplaysOnly(Render.done("Evicted", name), lines: 1, "evict")
        }
        #expect(Render.done("Downloaded", Self.newline) == "Downloaded new\\x0Aline.")
        #expect(Render.done("Pinned", "") == "Pinned the whole folder.")
    }

    @Test func conflictsVersionsAndRestoresShowNamesAsText() {
        let conflicts = [ConflictInfo(path: WirePath(Self.clearScreen), conflictCopy: WirePath(Self.newline))]
        assertDisplaysOnly(Render.conflicts(conflicts, plain), lines: 3, "conflicts")
        assertDisplaysOnly(Render.versions([], of: Self.newline, plain), lines: 1, "versions")
        let version = VersionInfo(id: "v1", size: 2, mtimeNs: 0, path: WirePath(Self.newline))
        assertDisplaysOnly(Render.allVersions([version], under: Self.clearScreen, plain), lines: 4, "versions --all")
    }

    @Test func watchLinesAndErrorsAreOneLineEach() {
        var renamed = EventParams(type: "renamed", timeNs: 0)
        renamed.setPath(WirePath(Self.newline))
        renamed.setFrom(WirePath(Self.clearScreen))
        renamed.side = "local"
        var error = EventParams(type: "error", timeNs: 0)
        error.setPath(WirePath(Self.bell))
        error.message = "cannot read \(Self.newline): permission denied"
        var refused = EventParams(type: "fetches-refused", timeNs: 0)
        refused.setPath(WirePath(Self.newline))
        refused.program = Self.clearScreen
        for event in [renamed, error, refused] {
            assertDisplaysOnly(Render.event(event, colored) ?? "", lines: 1, "watch \(event.type)")
        }
        #expect(Render.event(refused, plain)?.contains("download $'new\\x0aline'") == true,
                "the command to paste names the real file: \(Render.event(refused, plain) ?? "")")
        let failure = Failure(name: "not_found", message: "no such file", reason: "\(Self.newline) is not in the local folder",
                              suggestion: "check \(Self.clearScreen)", exitCode: 1, path: Self.bell)
        assertDisplaysOnly(failure.human(color: true), lines: 3, "an error")
    }
}
