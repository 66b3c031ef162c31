import Foundation
import NimbusProtocol
import Testing
import NimbusTestSupport

/// Runs every example of PROTOCOL.md against a real daemon, so the document cannot drift from
/// the code: each `json request` block is sent as one line, and the answer must match the
/// next `json response` block by structure (same keys, same types, equal values, except the
/// placeholder "…"); each `json notification` block must match a notification received.
@Suite struct ProtocolDocumentTests {
    static let documentPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Sources/NimbusProtocol/PROTOCOL.md").standardized.path

    struct Block {
        var kind: String
        var text: String
        var line: Int
    }

    /// The fenced blocks whose info string is `json request`, `json response` or
    /// `json notification`, in document order.
    static func blocks(_ document: String) -> [Block] {
        var result: [Block] = []
        var current: Block?
        for (number, line) in document.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if var block = current {
                if trimmed == "```" {
                    result.append(block)
                    current = nil
                } else {
                    block.text += String(line) + "\n"
                    current = block
                }
            } else if trimmed.hasPrefix("```json ") {
                current = Block(kind: String(trimmed.dropFirst("```json ".count)), text: "", line: number + 1)
            }
        }
        return result
    }

    /// Differences between an example and an actual value; empty when they match.
    static func differences(_ example: WireJSON, _ actual: WireJSON, at path: String = "") -> [String] {
        if example == .string("…") { return [] }
        switch (example, actual) {
        case (.object(let e), .object(let a)):
            var problems: [String] = []
            for key in Set(e.keys).union(a.keys).sorted() {
                switch (e[key], a[key]) {
                case let (x?, y?): problems += differences(x, y, at: path + "." + key)
                case (_?, nil): problems.append("\(path).\(key) is missing in the answer")
                case (nil, let y?): problems.append("\(path).\(key) = \(y) is in the answer but not in the example")
                case (nil, nil): break
                }
            }
            return problems
        case (.array(let e), .array(let a)):
            if e == [.string("…")] { return [] }
            guard e.count == a.count else { return ["\(path) has \(a.count) elements, the example \(e.count): \(actual)"] }
            return zip(e, a).enumerated().flatMap { differences($0.element.0, $0.element.1, at: "\(path)[\($0.offset)]") }
        default:
            return example == actual ? [] : ["\(path): expected \(example), got \(actual)"]
        }
    }

    @Test func documentHasAnExampleForEveryMethod() throws {
        let document = try String(contentsOfFile: Self.documentPath, encoding: .utf8)
        let requests = Self.blocks(document).filter { $0.kind == "request" }
        let methods = Set(requests.compactMap { try? WireJSON.parse(Array($0.text.utf8))["method"]?.string })
        for method in ControlMethod.allCases {
            #expect(methods.contains(method.rawValue), "PROTOCOL.md has no request example for \(method.rawValue)")
        }
        let notifications = Set(Self.blocks(document).filter { $0.kind == "notification" }
            .compactMap { try? WireJSON.parse(Array($0.text.utf8))["method"]?.string })
        for method in NotificationMethod.allCases {
            #expect(notifications.contains(method.rawValue), "PROTOCOL.md has no example of the \(method.rawValue) notification")
        }
    }

    @Test func examplesMatchARealDaemon() throws {
        let document = try String(contentsOfFile: Self.documentPath, encoding: .utf8)
        let blocks = Self.blocks(document)
        let daemon = try DaemonProcess { daemon in
            try daemon.write("notes.txt", "hello\n")
            try daemon.write("Documents/report.txt", "v1\n")
        }
        try daemon.waitUntilIdle()
        // The same connection sets up the fixture and runs the examples, so `status` counts
        // exactly one client.
        let client = try Self.prepareFixture(daemon)
        var index = 0
        while index < blocks.count {
            let block = blocks[index]
            index += 1
            guard block.kind == "request" else { continue }
            guard index < blocks.count, blocks[index].kind == "response" else {
                Issue.record("PROTOCOL.md line \(block.line): a request without a response example after it")
                continue
            }
            let expected = try WireJSON.parse(Array(blocks[index].text.utf8))
            index += 1
            // One line on the wire, as written (it may be deliberately broken JSON).
            let line = block.text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
            try client.send(line)
            let answer = try client.readAnswer()
            let problems = Self.differences(expected, answer)
            let report = problems.joined(separator: "\n  ")
            #expect(problems.isEmpty, "PROTOCOL.md line \(block.line): \(line)\n  answer: \(answer)\n  \(report)")
        }

        // The notification examples: the client called watch above; make something happen.
        let wanted = blocks.filter { $0.kind == "notification" }.map { ($0.line, try? WireJSON.parse(Array($0.text.utf8))) }
        try daemon.write("new.txt", "a new file\n")
        var unmatched = wanted
        let deadline = ContinuousClock.now + .seconds(20)
        while !unmatched.isEmpty && ContinuousClock.now < deadline {
            let seen = client.notifications
            client.notifications = []
            unmatched.removeAll { example in
                guard let pattern = example.1 else { return false }
                return seen.contains { Self.differences(pattern, $0).isEmpty }
            }
            if unmatched.isEmpty { break }
            if let line = try? client.readLine(timeout: 1), let value = try? WireJSON.parse(line) {
                client.notifications.append(value)
            }
        }
        for (line, example) in unmatched {
            Issue.record("PROTOCOL.md line \(line): no notification like \(example.map(\.description) ?? "(not JSON)") arrived")
        }
    }

    /// The state the examples describe: `notes.txt` in conflict, `Documents/report.txt`
    /// changed once (so one older version is kept), device name `laptop`.
    static func prepareFixture(_ daemon: DaemonProcess) throws -> SocketClient {
        let client = try daemon.client()
        try daemon.write("Documents/report.txt", "v2\n")
        try Polling.wait("report.txt to be uploaded with its old version kept") {
            guard daemon.read("Documents/report.txt", in: daemon.cloud) == "v2\n" else { return false }
            return try client.result("versions", #"{"path":"Documents/report.txt"}"#)["versions"]?.array?.count == 1
        }
        _ = try client.result("pause")
        try daemon.write("notes.txt", "changed here\n")
        try daemon.write("notes.txt", "changed in the cloud\n", in: daemon.cloud)
        _ = try client.result("resume")
        try Polling.wait("notes.txt to be in conflict and the daemon idle") {
            let status = try client.result("status")
            return status["conflicts"]?.int == 1 && status["phase"]?.string == "idle"
        }
        return client
    }
}
