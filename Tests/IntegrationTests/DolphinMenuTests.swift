import Foundation
import NimbusSystem
import NimbusTestSupport
import Testing

/// The Dolphin service menu (Packaging/dolphin): its actions, and its helper passing every
/// selected file to nimbusctl as one argument, whatever its name holds.
@Suite struct DolphinMenuTests {
    static let directory = PackageUnderTest.repository.appendingPathComponent("Packaging/dolphin").path
    static var menu: String { directory + "/nimbus.desktop" }
    static var helper: String { directory + "/nimbus-dolphin" }

    /// The groups of a desktop file: name → key → value.
    static func groups(_ text: String) -> [String: [String: String]] {
        var groups: [String: [String: String]] = [:]
        var current = ""
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            if line.hasPrefix("["), line.hasSuffix("]") {
                current = String(line.dropFirst().dropLast())
            } else if let equals = line.firstIndex(of: "=") {
                groups[current, default: [:]][String(line[..<equals])] = String(line[line.index(after: equals)...])
            }
        }
        return groups
    }

    @Test func theMenuOffersTheSameActionsAsTheNautilusMenu() throws {
        let groups = Self.groups(try String(contentsOfFile: Self.menu, encoding: .utf8))
        let entry = try #require(groups["Desktop Entry"])
        #expect(entry["Type"] == "Service" && entry["X-KDE-Submenu"] == "Nimbus")
        let actions = try #require(entry["Actions"]).split(separator: ";").map(String.init)
        var names: [String] = []
        for action in actions {
            let group = try #require(groups["Desktop Action \(action)"], "no group for the action \(action)")
            names.append(group["Name"] ?? "")
            let exec = group["Exec"] ?? ""
            #expect(exec.hasPrefix("/usr/libexec/nimbus/nimbus-dolphin ") && exec.hasSuffix(" %F"), "\(action): \(exec)")
        }
        #expect(names == ["Download now", "Free up space", "Always keep on this device", "Unpin", "Show versions",
                          "Keep this device's version", "Keep the cloud's version", "Keep both"])
    }

    /// desktop-file-validate knows only the freedesktop types: what it says about a KDE
    /// service menu (Type=Service with MimeType and Actions, the pseudo-type all/all) is
    /// expected; anything else is a mistake.
    @Test func desktopFileValidateFindsNothingElse() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/desktop-file-validate") else {
            print("skipped: desktop-file-validate is not installed (apt-get install desktop-file-utils)")
            return
        }
        let result = SyncHarness.run("/usr/bin/desktop-file-validate", [Self.menu])
        let unexpected = result.output.split(separator: "\n").filter { line in
            !(line.contains("the type is \"Service\" while this key is only valid for type \"Application\"")
              || line.contains("\"all\" is an unregistered media type"))
        }
        #expect(unexpected.isEmpty, "\(result.output)")
    }

    /// A stand-in nimbusctl records its arguments; names with spaces, quotes, `$(...)` and a
    /// leading dash reach it unchanged, resolve runs per file, and the daemon whose socket
    /// answers `info` for the first file is the one used (several instances).
    @Test func everyFileReachesNimbusctlAsOneArgument() throws {
        let sandbox = try SyncSandbox("dolphin-helper")
        defer { sandbox.finish() }
        let record = sandbox.root + "/calls"
        let fake = sandbox.root + "/nimbusctl"
        let runtime = try sandbox.folder("run")
        let work = try sandbox.folder("run/nimbus") + "/work.sock"
        try ShellCommand.installScript("""
            #!/bin/sh
            case " $* " in *" info "*) [ "$2" = '\(work)' ]; exit $?;; esac
            for a in "$@"; do printf '<%s>' "$a" >> '\(record)'; done
            echo >> '\(record)'
            case "$*" in *" /fail") echo 'no daemon' >&2; exit 69;; esac
            """, at: fake)
        let odd = ["/home/u/Nimbus/a b.txt", "/home/u/Nimbus/it's \"$(rm -rf ~)\".txt", "/home/u/Nimbus/-n"]
        func helper(_ arguments: [String]) -> (status: Int32, output: String) {
            SyncHarness.run("/usr/bin/env", ["NIMBUSCTL=\(fake)", "PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=\(runtime)", "/bin/sh", Self.helper]
                            + arguments)
        }
        #expect(helper(["download"] + odd).status == 0)
        #expect(helper(["keep-cloud"] + odd.prefix(2)).status == 0)
        let failed = helper(["pin", "/fail"])
        #expect(failed.status == 69 && failed.output.contains("no daemon"), "\(failed)")
        #expect(helper(["frobnicate", "/x"]).status == 64)
        // Two daemons running: the one that knows the file is asked.
        let sockets = try [work, runtime + "/nimbus/other.sock"].map { try UnixStreamSocket.listen(at: $0) }
        defer { sockets.forEach { $0.close() } }
        #expect(helper(["evict", "/w/x"]).status == 0)
        let calls = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(calls == [
            "<--no-color><download>" + odd.map { "<\($0)>" }.joined(),
            "<--no-color><resolve><\(odd[0])><--keep><cloud>",
            "<--no-color><resolve><\(odd[1])><--keep><cloud>",
            "<--no-color><pin></fail>",
            "<--socket><\(work)><--no-color><evict></w/x>",
        ])
    }
}
