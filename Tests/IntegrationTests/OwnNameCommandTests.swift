import Foundation
import NimbusTestTraits
import Testing

/// Nimbus's own names in the local folder (its marker, `.nimbus`, a copy's temporary, the
/// holding folder of kept deletions and what is in it) are not the user's files: every command
/// that takes a path answers `nimbus_own` (-32013), exit status 1, saying plainly what the name
/// is and that it is never synced, whether or not it exists, and listings leave them out;
/// against a real daemon through the real nimbusctl. (Before, only info did; ls said "belongs to Nimbus itself" as not_found, and pin,
/// evict, download and the rest said not_found or worse.)
@Suite(.onAThreadOfItsOwn(timeLimit: .minutes(3)))
struct OwnNameCommandTests {
    /// Each own name, and words its reason must contain.
    static let ownNames = [
        (".nimbus-root", "the marker Nimbus keeps"),
        (".nimbus", "the folder where Nimbus keeps its own data in the cloud folder"),
        (".nimbus/versions", "inside .nimbus, the name of the folder"),
        (".nimbus-tmp-deleted", "keeps local files a sync deleted"),
        (".nimbus-tmp-deleted/d/kept.txt", "in .nimbus-tmp-deleted, where Nimbus keeps local files a sync deleted"),
        (".nimbus-tmp-0123456789abcdef", "a temporary file of a copy Nimbus is making"),
        ("d/.nimbus-tmp-write-1", "a name Nimbus keeps for its temporary files"),
    ]

    /// Every command that sends a path to the daemon, OWN standing for the own name: one
    /// protocol method or more each (lock: acquire; restore --to: the target path).
    static let commands: [[String]] = [
        ["info", "OWN"], ["ls", "OWN"], ["ls", "-r", "OWN"], ["pin", "OWN"], ["unpin", "OWN"], ["evict", "OWN"],
        ["download", "OWN"], ["download", "--no-wait", "OWN"], ["versions", "OWN"], ["versions", "--all", "OWN"],
        ["resolve", "OWN", "--keep", "both"], ["restore", "OWN"], ["restore", "a.txt", "--to", "OWN"],
        ["lock", "--wait", "0", "OWN", "--", "true"],
    ]

    @Test func everyCommandTakingAPathAnswersNimbusOwn() async throws {
        try await CtlDaemon.with { d in
            try d.write("a.txt", "hello")
            try d.write(".nimbus-tmp-deleted/d/kept.txt", "deleted by a sync, kept for a while")
            try d.write(".nimbus/notes.txt", "a folder the user made under Nimbus's name")
            try await d.waitForCloud("a.txt", "hello")
            let listed = try await d.ctl(["--json", "ls", "-r"])
            let paths = ((try? listed.json()["entries"] as? [[String: Any]]) ?? []).compactMap { $0["path"] as? String }
            #expect(paths.contains("a.txt") && !paths.contains { $0.hasPrefix(".nimbus") }, "\(listed)")
            for command in Self.commands {
                for (own, what) in Self.ownNames {
                    let arguments = command.map { $0 == "OWN" ? own : $0 }
                    let json = try await d.ctl(["--json"] + arguments)
                    let error = (try? json.json()["error"] as? [String: Any]) ?? [:]
                    #expect(json.status == 1 && error["name"] as? String == "nimbus_own" && error["code"] as? Int == -32013
                            && error["exitCode"] as? Int == 1, "\(arguments): \(json)")
                    #expect((error["reason"] as? String)?.contains(what) == true, "\(arguments): \(json)")
                }
                // The human form once per command: the same three lines as info's (with the path first
                // for commands that take several).
                let human = try await d.ctl(command.map { $0 == "OWN" ? ".nimbus-root" : $0 })
                #expect(human.status == 1 && human.stderr.contains("Nimbus's own name, never synced")
                        && human.stderr.contains("reason: .nimbus-root is the marker Nimbus keeps")
                        && human.stderr.contains("it is never synced")
                        && human.stderr.contains("suggestion: nothing to do: Nimbus creates and removes it by itself"),
                        "\(command): \(human)")
            }
            #expect(d.read(".nimbus-tmp-deleted/d/kept.txt") == "deleted by a sync, kept for a while", "nothing touched it")
        }
    }
}
