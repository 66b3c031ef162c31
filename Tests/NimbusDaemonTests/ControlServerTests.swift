import Foundation
import NimbusProtocol
import NimbusSystem
import Testing
import NimbusTestSupport
@testable import NimbusDaemon

/// The control socket of a real `nimbusd` process, spoken to in raw NDJSON (DESIGN §7).
@Suite struct ControlServerTests {
    @Test func everyMethodAnswers() throws {
        let daemon = try DaemonProcess { try $0.write("a.txt", "a\n") }
        try daemon.waitUntilIdle()
        let client = try daemon.client()
        let calls: [(ControlMethod, String?, String?)] = [  // method, params, expected error name (nil: success)
            (.hello, #"{"versions":[1,7]}"#, nil),
            (.status, nil, nil),
            (.list, #"{"recursive":true}"#, nil),
            (.stat, #"{"path":"a.txt"}"#, nil),
            (.pin, #"{"path":"a.txt"}"#, nil),
            (.evict, #"{"path":"a.txt"}"#, "pinned"),
            (.unpin, #"{"path":"a.txt"}"#, nil),
            (.download, #"{"path":"a.txt"}"#, nil),
            (.conflicts, nil, nil),
            (.resolve, #"{"path":"a.txt","keep":"both"}"#, "not_in_conflict"),
            (.versions, #"{"path":"a.txt"}"#, nil),
            (.restore, #"{"path":"a.txt"}"#, "not_found"),
            (.prune, nil, nil),
            (.pause, nil, nil),
            (.rescan, nil, "paused"),
            (.resume, nil, nil),
            (.rescan, nil, nil),
            (.confirmDeletes, nil, nil),
            (.revertDeletes, nil, nil),
            (.watch, #"{"progress":false}"#, nil),
            (.locks, nil, nil),
            (.reload, nil, nil),
            (.acquire, #"{"path":"a.txt","mode":"exclusive","timeoutSeconds":0}"#, nil),
            (.release, #"{"lease":1}"#, nil),
            (.release, #"{"lease":1}"#, "not_found"),
        ]
        #expect(Set(calls.map(\.0)) == Set(ControlMethod.allCases), "every method is called")
        for (method, params, expectedError) in calls {
            let answer = try client.call(method.rawValue, params)
            if let expectedError {
                #expect(answer.errorName == expectedError, "\(method): \(answer)")
                let data = answer["error"]?["data"]
                #expect(data?["reason"]?.string?.isEmpty == false && data?["suggestion"]?.string?.isEmpty == false,
                        "every error has a reason and a suggestion: \(answer)")
            } else {
                #expect(answer["result"] != nil, "\(method): \(answer)")
            }
        }
        let stat = try client.result("stat", #"{"path":"a.txt"}"#)
        #expect(stat["state"]?.string == "downloaded" && stat["size"]?.int == 2 && stat["kind"]?.string == "file")
        #expect(try client.result("hello", #"{"versions":[1]}"#)["version"]?.int == 1)
        #expect(try client.call("hello", #"{"versions":[99]}"#).errorName == "not_supported")
    }

    @Test func badInputIsAnsweredWhileOthersAreServed() throws {
        let daemon = try DaemonProcess()
        try daemon.waitUntilIdle()
        let bad = try daemon.client(), good = try daemon.client()
        let cases: [(String, String, Int64)] = [
            (#"{"jsonrpc":"2.0","id":1,"method":"status""#, "parse_error", -32700),
            (#"{"jsonrpc":"2.0","id":2,"method":"list","params":{"recursive":"yes"}}"#, "invalid_params", -32602),
            (#"{"jsonrpc":"2.0","id":3,"method":"list","params":[1]}"#, "invalid_params", -32602),
            (#"{"jsonrpc":"2.0","id":4,"method":"stat","params":{"path":5}}"#, "invalid_params", -32602),
            (#"{"jsonrpc":"2.0","id":5,"method":"acquire","params":{"path":"a","mode":"forever"}}"#, "invalid_params", -32602),
            (#"{"jsonrpc":"2.0","id":6,"method":"frobnicate"}"#, "method_not_found", -32601),
            (#"{"jsonrpc":"1.0","id":7,"method":"status"}"#, "invalid_request", -32600),
            (#"[{"jsonrpc":"2.0","id":8,"method":"status"}]"#, "invalid_request", -32600),
            (#""just a string""#, "invalid_request", -32600),
        ]
        for (line, name, code) in cases {
            try bad.send(line)
            let answer = try bad.readAnswer()
            #expect(answer.errorName == name && answer["error"]?["code"]?.int == code, "\(line) → \(answer)")
            #expect(try good.result("status")["phase"] != nil)
        }
        // Binary garbage, including NUL and invalid UTF-8.
        try bad.sendRaw([0x00, 0xFF, 0xFE, 0x7B, 0x80, 0x0A])
        #expect(try bad.readAnswer().errorName == "parse_error")
        #expect(try good.result("status")["phase"] != nil)
        // The id of a request with bad params is kept so the client can match the error.
        try bad.send(#"{"jsonrpc":"2.0","id":"x-9","method":"stat","params":{"path":true}}"#)
        #expect(try bad.readAnswer()["id"]?.string == "x-9")
        #expect(daemon.isRunning)
    }

    /// A parameter a method does not take is refused, named, with the one probably meant:
    /// ignoring `paths` would list the whole root instead of the folder asked for.
    @Test func unknownParametersAreRefusedForEveryMethod() throws {
        let daemon = try DaemonProcess()
        try daemon.waitUntilIdle()
        let client = try daemon.client()
        let typo = try client.call("list", #"{"paths":["x"]}"#)
        #expect(typo.errorName == "invalid_params", "\(typo)")
        #expect(typo["error"]?["message"]?.string == #"unknown parameter "paths" for list"#, "\(typo)")
        #expect(typo["error"]?["data"]?["suggestion"]?.string == #"did you mean "path"?"#, "\(typo)")
        #expect(typo["error"]?["data"]?["reason"]?.string?.contains("path, pathBytes, recursive") == true, "\(typo)")
        for method in ControlMethod.allCases {
            let answer = try client.call(method.rawValue, #"{"bogusParameter":1}"#)
            #expect(answer.errorName == "invalid_params", "\(method): \(answer)")
            #expect(answer["error"]?["message"]?.string?.contains("bogusParameter") == true, "\(method): \(answer)")
        }
        let stat = try client.call("stat", #"{"path":"a","pathbytes":"YQ=="}"#)
        #expect(stat["error"]?["data"]?["suggestion"]?.string == #"did you mean "pathBytes"?"#, "\(stat)")
        #expect(try client.result("status", "{}")["phase"] != nil, "an empty params object is fine")
    }

    @Test func hostilePathsAreInvalid() throws {
        let outside = FileManager.default.temporaryDirectory.path + "/nimbus-outside-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: outside) }
        try Data("secret".utf8).write(to: URL(fileURLWithPath: outside + "/secret.txt"))
        let daemon = try DaemonProcess { daemon in
            try daemon.write("docs/a.txt", "a")
            try FileManager.default.createSymbolicLink(atPath: daemon.local + "/escape", withDestinationPath: outside)
        }
        try daemon.waitUntilIdle()
        let client = try daemon.client()
        let hostile = [#""../etc/passwd""#, #""docs/../../x""#, #""/etc/passwd""#, #""docs/a\u0000.txt""#, #""docs//a.txt""#,
                       #""escape/secret.txt""#, #""escape/deeper/x""#]
        for path in hostile {
            for method in ["stat", "list", "versions", "acquire", "download"] {
                let extra = method == "acquire" ? #","mode":"shared""# : ""
                let answer = try client.call(method, "{\"path\":\(path)\(extra)}")
                #expect(answer.errorName == "invalid_path" && answer["error"]?["code"]?.int == -32602, "\(method) \(path): \(answer)")
            }
        }
        #expect(try client.call("restore", #"{"path":"docs/a.txt","to":"../x"}"#).errorName == "invalid_path")
        #expect(try client.call("stat", #"{"pathBytes":"Li4vZXRj"}"#).errorName == "invalid_path")  // "../etc"
        // The symlink itself is a legitimate path (it is synced as a symlink).
        #expect(try client.result("stat", #"{"path":"escape"}"#)["kind"]?.string == "symlink")
        #expect(try client.result("stat", #"{"path":"docs/a.txt"}"#)["size"]?.int == 1)
    }

    @Test func nonUTF8NamesRoundTrip() throws {
        let name: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".txt".utf8)
        let daemon = try DaemonProcess { daemon in
            let fd = try FileDescriptor.open(SystemPath(daemon.local).appending(SystemPath(bytes: name)),
                                             [.writeOnly, .create], permissions: 0o644)
            try fd.closeAfter { try fd.writeAll(Array("latin".utf8)) }
        }
        try daemon.waitUntilIdle()
        let client = try daemon.client()
        let entries = try #require(try client.result("list")["entries"]?.array)
        let entry = try #require(entries.first { $0["pathBytes"] != nil }, "\(entries)")
        let base64 = try #require(entry["pathBytes"]?.string)
        #expect(Data(base64Encoded: base64).map([UInt8].init) == name)
        #expect(entry["path"]?.string == "caf\\xE9.txt")
        let stat = try client.result("stat", "{\"pathBytes\":\"\(base64)\"}")
        #expect(stat["size"]?.int == 5 && stat["pathBytes"]?.string == base64 && stat["state"]?.string == "downloaded")
    }

    @Test func listingsLongerThanOneLineArePaged() throws {
        let daemon = try DaemonProcess { daemon in
            for index in 0..<3000 { try daemon.write("many/\(String(repeating: "p", count: 245))-\(index)", "") }
        }
        try daemon.waitUntilIdle(timeout: .seconds(60))
        let client = try daemon.client()
        var seen = 0, pages = 0
        var params = #"{"path":"many"}"#
        while true {
            try client.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"list\",\"params\":\(params)}")
            guard let line = try client.readLine() else { throw HarnessFailure("closed") }
            #expect(line.count <= maximumLineLength, "a line of \(line.count) bytes")
            let result = try #require(try WireJSON.parse(line)["result"])
            seen += result["entries"]?.array?.count ?? 0
            pages += 1
            guard let cursor = result["nextCursor"]?.string else { break }
            params = "{\"cursor\":\"\(cursor)\"}"
        }
        #expect(seen == 3000 && pages > 1)
        #expect(try client.call("list", #"{"cursor":"nope"}"#).errorName == "not_found")
        #expect(try client.result("list", #"{"path":"many","limit":10}"#)["entries"]?.array?.count == 10)
    }

    /// `list` computes states in one pass over a scan; `stat` asks the engine path by path.
    /// They must agree on every state a path can be in here.
    @Test func listAgreesWithStat() throws {
        let daemon = try DaemonProcess { daemon in
            try daemon.write("synced.txt", "s")
            try daemon.write("conflicted.txt", "c")
            try daemon.write("folder/inner.txt", "i")
            try FileManager.default.createSymbolicLink(atPath: daemon.local + "/link", withDestinationPath: "synced.txt")
        }
        try daemon.waitUntilIdle()
        let client = try daemon.client()
        _ = try client.result("pause")
        try daemon.write("conflicted.txt", "here")
        try daemon.write("conflicted.txt", "there", in: daemon.cloud)
        _ = try client.result("resume")
        try Polling.wait("the conflict") { try client.result("status")["conflicts"]?.int == 1 }
        _ = try client.result("pause")
        try daemon.write("folder/new.txt", "waiting to upload")
        try daemon.write("synced.txt", "changed here")
        let entries = try #require(try client.result("list", #"{"recursive":true}"#)["entries"]?.array)
        let states = Set(entries.compactMap { $0["state"]?.string })
        #expect(states.isSuperset(of: ["downloaded", "conflict", "local"]), "\(entries)")
        for entry in entries {
            let path = try #require(entry["path"]?.string)
            let stat = try client.result("stat", "{\"path\":\"\(path)\"}")
            #expect(stat == entry, "list and stat disagree on \(path)")
        }
    }
}
